package pace

import "context"

// classKey carries a write's Class on a context.
type classKey struct{}

// ticketKey carries the Ticket of the group of writes under way.
type ticketKey struct{}

// WithClass is ctx whose writes are of class c.
func WithClass(ctx context.Context, c Class) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

// ClassOf is the class of the writes made under ctx: background unless said
// otherwise, so that work no person waits for never eats into the headroom.
func ClassOf(ctx context.Context) Class {
	if c, ok := ctx.Value(classKey{}).(Class); ok {
		return c
	}
	return Background
}

// WithTicket is ctx whose writes take their turns from t while it has any.
func WithTicket(ctx context.Context, t *Ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

// TicketOf is the ticket ctx carries (nil: none).
func TicketOf(ctx context.Context) *Ticket {
	t, _ := ctx.Value(ticketKey{}).(*Ticket)
	return t
}
