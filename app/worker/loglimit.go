package worker

import (
	"sync"
	"time"
)

// LogLimiter lets a repeating log line through at most once per period and
// counts what it held back, so an outage (the store unreachable) logs a
// line every few seconds rather than several a second.
type LogLimiter struct {
	period time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func NewLogLimiter(period time.Duration) *LogLimiter { return &LogLimiter{period: period} }

// Allow reports whether to log now, and how many lines were held back since
// the last one logged.
func (l *LogLimiter) Allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.period {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	return true, n
}
