package gh

import (
	"context"

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
