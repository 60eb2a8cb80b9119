package effects

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/countersign/countersign/app/card"
	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/google/go-github/v60/github"
)

// syncCard makes the task card show the task's current record. It returns
// the records to keep about the card (written with the effect's pop).
func (x *Executor) syncCard(ctx context.Context, c Client, owner, name string, e rules.Effect) (map[string][]byte, error) {
	task, err := records.LoadTask(ctx, x.store, e.Repo, e.Number)
	if err != nil || task == nil {
		return nil, err // no record: nothing to show
	}
	body, err := card.Render(task, x.keys)
	if err != nil {
		return nil, fault.Permanent(err)
	}
	bot, err := x.gh.BotLogin(ctx)
	if err != nil {
		return nil, err
	}
	idKey := records.CardIDKey(e.Repo, e.Number)
	var id int64
	if b, err := x.store.Get(ctx, idKey); err == nil {
		id, _ = strconv.ParseInt(string(b), 10, 64)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("read card id: %w", err)
	}

	// The card's text as countersign last wrote it (a digest): the card is
	// not read back. Saying the same again writes nothing; a new text is
	// written over the card at once (a 404: it was deleted, find or post
	// another). Applied twice after a crash, the same text is written twice.
	digestKey := records.CardDigestKey(e.Repo, e.Number)
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte(body)))
	if id != 0 {
		last, err := x.store.Get(ctx, digestKey)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("read card digest: %w", err)
		}
		if err == nil && string(last) == digest+"@"+strconv.FormatInt(id, 10) {
			return nil, nil
		}
		if err == nil { // known, and its text changes: edit it without reading it
			edited, _, err := c.EditComment(ctx, owner, name, id, &github.IssueComment{Body: github.String(body)})
			switch {
			case err == nil:
				return x.cardWritten(ctx, e, edited, id, digestKey, digest)
			case !fault.IsStatus(err, http.StatusNotFound):
				return nil, fmt.Errorf("edit card: %w", err)
			}
			id = 0 // deleted: find or post another
		}
	}

	var current *github.IssueComment
	if id != 0 {
		current, _, err = c.GetComment(ctx, owner, name, id)
		if fault.IsStatus(err, http.StatusNotFound) {
			current, err = nil, nil // deleted: find or post another
		} else if err != nil {
			return nil, fmt.Errorf("get card: %w", err)
		}
	}
	if current == nil {
		if current, err = card.Find(ctx, c, owner, name, e.Number, bot); err != nil {
			return nil, err
		}
	}
	switch {
	case current == nil:
		current, _, err = c.CreateComment(ctx, owner, name, e.Number, &github.IssueComment{Body: github.String(body)})
		if err != nil {
			return nil, fmt.Errorf("post card: %w", err)
		}
	case current.GetBody() != body:
		if _, _, err = c.EditComment(ctx, owner, name, current.GetID(), &github.IssueComment{Body: github.String(body)}); err != nil {
			return nil, fmt.Errorf("edit card: %w", err)
		}
	}
	return x.cardWritten(ctx, e, current, id, digestKey, digest)
}

// cardWritten is what to remember of the card countersign wrote for e's
// task: its id (if it is not id), its address, and the digest of its text.
func (x *Executor) cardWritten(ctx context.Context, e rules.Effect, current *github.IssueComment, id int64, digestKey, digest string) (map[string][]byte, error) {
	recs := map[string][]byte{digestKey: []byte(digest + "@" + strconv.FormatInt(current.GetID(), 10))}
	if current.GetID() != id {
		recs[records.CardIDKey(e.Repo, e.Number)] = []byte(strconv.FormatInt(current.GetID(), 10))
	}
	if u := current.GetHTMLURL(); u != "" {
		if known, _ := x.cardURL(ctx, e.Repo, e.Number); known != u {
			recs[records.CardURLKey(e.Repo, e.Number)] = []byte(u)
		}
	}
	return recs, nil
}

// cardURL is the web address of task n's card, as GitHub gave it ("" if the
// card was not written yet).
func (x *Executor) cardURL(ctx context.Context, repo string, n int) (string, error) {
	b, err := x.store.Get(ctx, records.CardURLKey(repo, n))
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return string(b), err
}
