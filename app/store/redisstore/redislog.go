package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// SetLogger sends go-redis's own log lines (connection and pool
// trouble) to log as WARN lines, at most one every period (the number held
// back is in the next one's "suppressed"), instead of plain text on stderr:
// while Redis is unreachable they would otherwise come several a second.
// go-redis's logger is process-wide; without this call (the store
// commands) its lines are dropped.
func SetLogger(log *slog.Logger, period time.Duration) {
	redis.SetLogger(&redisLogger{log: log, period: period})
}

type redisLogger struct {
	log    *slog.Logger
	period time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.period {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	l.log.WarnContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis", "suppressed", n)
}
