package githubtest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

func (s *Server) activityRoutes(h routeFunc) {
	h("GET", "/repos/{owner}/{repo}/activity", authRepo, s.listActivity)
}

// activityItem is one entry of GET /repos/{owner}/{repo}/activity, as
// GitHub's "activity" schema has it.
type activityItem struct {
	ID           int64        `json:"id"`
	NodeID       string       `json:"node_id"`
	Before       string       `json:"before"`
	After        string       `json:"after"`
	Ref          string       `json:"ref"`
	Timestamp    time.Time    `json:"timestamp"`
	ActivityType string       `json:"activity_type"`
	Actor        *github.User `json:"actor"`
}

var activityTypes = map[string]bool{"push": true, "force_push": true, "branch_creation": true, "branch_deletion": true,
	"pr_merge": true, "merge_queue_merge": true}

var activityPeriods = map[string]time.Duration{"day": 24 * time.Hour, "week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour,
	"quarter": 91 * 24 * time.Hour, "year": 365 * 24 * time.Hour}

// activityCursor is the opaque cursor of the entry with id.
func activityCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("activity:" + strconv.FormatInt(id, 10)))
}

// activityCursorID is the entry id a cursor names.
func activityCursorID(cur string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(cur)
	if err != nil || !strings.HasPrefix(string(b), "activity:") {
		return 0, false
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(string(b), "activity:"), 10, 64)
	return id, err == nil
}

// listActivity is GET /repos/{owner}/{repo}/activity: the repository's
// pushes and branch changes, newest first (direction=asc: oldest first),
// filtered by ref (refs/heads/NAME or NAME), actor, time_period and
// activity_type; per_page (default 30, max 100); cursor pagination through
// the Link header (after: the next page, before: the previous one).
func (s *Server) listActivity(c *apiCall) {
	q := c.r.URL.Query()
	dir := q.Get("direction")
	if dir == "" {
		dir = "desc"
	}
	if dir != "asc" && dir != "desc" {
		c.invalid("Activity", "direction", "invalid", "direction must be asc or desc")
		return
	}
	kind := q.Get("activity_type")
	if kind != "" && !activityTypes[kind] {
		c.invalid("Activity", "activity_type", "invalid", "activity_type is not a valid activity type")
		return
	}
	period, since := q.Get("time_period"), time.Time{}
	if period != "" {
		d, ok := activityPeriods[period]
		if !ok {
			c.invalid("Activity", "time_period", "invalid", "time_period must be day, week, month, quarter or year")
			return
		}
		since = now().Add(-d)
	}
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	ref := q.Get("ref")
	if ref != "" && !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	var list []*activityState
	for _, a := range c.repo.activity {
		switch {
		case ref != "" && a.ref != ref,
			q.Get("actor") != "" && !strings.EqualFold(q.Get("actor"), a.actor),
			kind != "" && a.kind != kind,
			!since.IsZero() && a.at.Before(since):
			continue
		}
		list = append(list, a)
	}
	if dir == "desc" {
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	}
	at := func(cur string) (int, bool) {
		id, ok := activityCursorID(cur)
		if !ok {
			return 0, false
		}
		for i, a := range list {
			if a.id == id {
				return i, true
			}
		}
		return 0, false
	}
	start, end := 0, min(perPage, len(list))
	switch {
	case q.Get("after") != "":
		i, ok := at(q.Get("after"))
		if !ok {
			c.invalid("Activity", "after", "invalid", "after is not a valid cursor")
			return
		}
		start, end = i+1, min(i+1+perPage, len(list))
	case q.Get("before") != "":
		i, ok := at(q.Get("before"))
		if !ok {
			c.invalid("Activity", "before", "invalid", "before is not a valid cursor")
			return
		}
		start, end = max(i-perPage, 0), i
	}
	page := list[start:end]
	var links []string
	link := func(rel, param string, id int64) {
		q2 := url.Values{}
		for k, v := range q {
			if k != "after" && k != "before" {
				q2[k] = v
			}
		}
		q2.Set(param, activityCursor(id))
		links = append(links, fmt.Sprintf(`<http://%s%s?%s>; rel="%s"`, c.r.Host, c.info.origPath, q2.Encode(), rel))
	}
	if end < len(list) && len(page) > 0 {
		link("next", "after", page[len(page)-1].id)
	}
	if start > 0 && len(page) > 0 {
		link("prev", "before", page[0].id)
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	out := make([]activityItem, 0, len(page))
	for _, a := range page {
		out = append(out, activityItem{ID: a.id, NodeID: nodeID("RA", a.id), Before: a.before, After: a.after, Ref: a.ref,
			Timestamp: a.at.UTC().Truncate(time.Second), ActivityType: a.kind, Actor: s.ghUser(a.actor)})
	}
	c.json(http.StatusOK, out)
}
