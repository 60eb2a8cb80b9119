package gh

import (
	"context"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// Own reports whether sender is this App: its writes come back as webhooks and
// must not be acted on again.
func (g *GitHub) Own(ctx context.Context, sender *github.User) (bool, error) {
	if sender.GetType() != "Bot" {
		return false, nil
	}
	bot, err := g.BotLogin(ctx)
	if err != nil {
		return false, err
	}
	return sender.GetLogin() == bot, nil
}

// OwnApp reports whether a check run or suite is this App's own.
func (g *GitHub) OwnApp(a *github.App) bool {
	return a != nil && g.AppID() != 0 && a.GetID() == g.AppID()
}

// KnownBotLogin is the login of this App's bot account once BotLogin has
// read it ("" before): it never asks GitHub.
func (g *GitHub) KnownBotLogin() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.botLogin
}

// expectTTL is how long a label write countersign is about to make is
// expected back as a webhook (GitHub sends them within seconds).
const expectTTL = 2 * time.Minute

// expectMax bounds the label writes remembered at once.
const expectMax = 1 << 16

// labelWrite is a label countersign adds to (or removes from) an issue.
type labelWrite struct {
	repo  string
	n     int
	label string
	added bool
}

// ExpectLabel notes that countersign is about to add (or remove) label on
// issue n of repo, so that its echo is known for countersign's own before its
// label record is updated (LabelExpected).
func (g *GitHub) ExpectLabel(repo string, n int, label string, added bool) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	// The expired are dropped once every expectTTL (not only when the map
	// is full: it held 65,536 writes long past their echoes).
	if g.expected == nil || len(g.expected) >= expectMax || now.Sub(g.expectSwept) >= expectTTL {
		g.expectSwept = now
		for w, at := range g.expected {
			if now.Sub(at) > expectTTL || len(g.expected) >= expectMax {
				delete(g.expected, w)
			}
		}
		if g.expected == nil {
			g.expected = map[labelWrite]time.Time{}
		}
	}
	g.expected[labelWrite{repo, n, strings.ToLower(label), added}] = now
}

// LabelExpected reports whether countersign noted adding (or removing) label
// on issue n of repo within the last expectTTL.
func (g *GitHub) LabelExpected(repo string, n int, label string, added bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.expected[labelWrite{repo, n, strings.ToLower(label), added}]
	return ok && time.Since(at) <= expectTTL
}
