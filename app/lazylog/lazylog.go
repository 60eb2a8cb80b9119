// Package lazylog defers a logger's attributes until it logs. Every delivery
// gets a logger carrying its id, event and key (Logger.With), and most log
// nothing at the levels on in production; slog's JSON and text handlers
// format those attributes when With is called, so each delivery paid for
// formatting them. Wrapped, the handler formats them the first time a
// record is handled.
package lazylog

import (
	"context"
	"log/slog"
	"sync"
)

// Handler is h with its attributes kept until a record is handled.
func Handler(h slog.Handler) slog.Handler { return &lazy{parent: h} }

type lazy struct {
	parent slog.Handler // the handler the attributes are added to
	attrs  []slog.Attr  // added by WithAttrs, not yet given to parent

	once sync.Once
	h    slog.Handler // parent.WithAttrs(attrs), once needed
}

func (l *lazy) Enabled(ctx context.Context, level slog.Level) bool {
	return l.parent.Enabled(ctx, level)
}

func (l *lazy) handler() slog.Handler {
	l.once.Do(func() {
		l.h = l.parent
		if len(l.attrs) > 0 {
			l.h = l.parent.WithAttrs(l.attrs)
		}
	})
	return l.h
}

func (l *lazy) Handle(ctx context.Context, r slog.Record) error {
	return l.handler().Handle(ctx, r)
}

func (l *lazy) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	all := make([]slog.Attr, 0, len(l.attrs)+len(attrs))
	all = append(append(all, l.attrs...), attrs...)
	return &lazy{parent: l.parent, attrs: all}
}

func (l *lazy) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	return &lazy{parent: l.handler().WithGroup(name)}
}
