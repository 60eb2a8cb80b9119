package ghhealth

import (
	"context"
	"slices"
	"sync"
)

type scopeKey struct{}
type probeKey struct{}
type seenKey struct{}

// WithScope marks ctx's requests as scope s's.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeOf is the scope ctx's requests belong to, if any.
func ScopeOf(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok
}

// WithProbe marks ctx's requests as a probe: sent while the scope is away.
func WithProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, probeKey{}, true)
}

// IsProbe reports whether ctx's requests are a probe.
func IsProbe(ctx context.Context) bool {
	p, _ := ctx.Value(probeKey{}).(bool)
	return p
}

// Seen records the scopes that requests made under one context found away.
type Seen struct {
	mu     sync.Mutex
	scopes []Scope
}

// Track returns a context whose requests record in the returned Seen the
// scopes they found away (or were not sent for).
func Track(ctx context.Context) (context.Context, *Seen) {
	s := &Seen{}
	return context.WithValue(ctx, seenKey{}, s), s
}

func note(ctx context.Context, s Scope) {
	seen, ok := ctx.Value(seenKey{}).(*Seen)
	if !ok {
		return
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if !slices.Contains(seen.scopes, s) {
		seen.scopes = append(seen.scopes, s)
	}
}

// Scopes lists the scopes found away, in the order they were.
func (s *Seen) Scopes() []Scope {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.scopes)
}
