package gh

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v60/github"
)

// The App's installations by account, read from GET /app/installations (100
// a page): which installation a repository is read through when nothing
// recorded says so (a repository tracked before its first resync). Asking
// GitHub repository by repository (GET /repos/{owner}/{repo}/installation)
// made a start-up pass over 5,000 such repositories send 5,000 look-ups;
// the directory costs a request per 100 installations, at most once every
// directoryFresh (once every directoryRetry when an account is missing from
// it: installed since).
const (
	directoryFresh = 10 * time.Minute
	directoryRetry = time.Minute
)

// directory is the installations by lower-case account login.
type directory struct {
	mu      sync.Mutex // held while it is read from GitHub: one reading at a time
	byOwner map[string]int64
	at      time.Time // when it was read (zero: never)
}

// InstallationOf is the App's installation on owner's account (false: the
// App is not installed there), from the App's list of installations read at
// most every directoryFresh.
func (g *GitHub) InstallationOf(ctx context.Context, owner string) (int64, bool, error) {
	d := &g.dir
	d.mu.Lock()
	defer d.mu.Unlock()
	key := strings.ToLower(owner)
	now := g.clock.Now()
	id, ok := d.byOwner[key]
	age := now.Sub(d.at)
	if d.at.IsZero() || age >= directoryFresh || (!ok && age >= directoryRetry) {
		byOwner, err := g.readDirectory(ctx)
		if err != nil {
			return 0, false, err
		}
		d.byOwner, d.at = byOwner, now
		id, ok = d.byOwner[key]
	}
	return id, ok, nil
}

// readDirectory lists the App's installations.
func (g *GitHub) readDirectory(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	opt := &github.ListOptions{PerPage: 100}
	for {
		list, resp, err := g.app.Apps.ListInstallations(ctx, opt)
		if err != nil {
			return nil, fmt.Errorf("list the App's installations: %w", err)
		}
		for _, in := range list {
			if login := in.GetAccount().GetLogin(); login != "" && in.GetID() != 0 {
				out[strings.ToLower(login)] = in.GetID()
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}
