package lazylog

import (
	"bytes"
	"log/slog"
	"testing"
)

// A lazy logger writes what the handler it wraps writes, attributes and
// groups in the same order; a level that is off writes nothing.
func TestLazyWritesTheSame(t *testing.T) {
	log := func(l *slog.Logger) {
		l = l.With("delivery", "d1", slog.Int("n", 3))
		l.Debug("off")
		l.Info("one", "k", "v")
		g := l.WithGroup("g").With("in", true)
		g.Warn("two", "x", 1)
		l.With().WithGroup("").Info("three")
		g.WithGroup("h").With("deep", "y").Error("four")
	}
	var want, got bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	log(slog.New(slog.NewJSONHandler(&want, opts)))
	log(slog.New(Handler(slog.NewJSONHandler(&got, opts))))
	if got.String() != want.String() {
		t.Fatalf("lazy logger wrote\n%s\nwant\n%s", got.String(), want.String())
	}
	if bytes.Contains(got.Bytes(), []byte("off")) {
		t.Fatalf("a record below the level was written:\n%s", got.String())
	}
}
