package gh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/countersign/countersign/app/pace"
	"github.com/google/go-github/v60/github"
	"github.com/shurcooL/githubv4"
)

// What is kept per installation is bounded, whatever the number of
// installations a process serves:
//
//   - an installation's clients and its token source (instClients) are
//     dropped once unused for instsIdle (its token, valid an hour, would be
//     renewed anyway), and the least recently used are dropped beyond
//     instsMax; they are made again when next needed, at the cost of one
//     token request. A client already handed out keeps working: its writes
//     take their turns from the installation's bucket as it is then.
//   - an installation's write pacing (pace.Bucket) is dropped only when it
//     is idle (no write inside any of its windows or ahead: a new bucket
//     would be the same) and was not looked up for bucketGrace. A bucket that
//     still counts writes is kept however many there are: forgetting it would
//     let the installation exceed GitHub's limits. Those are at most the
//     installations that wrote in the last hour.
const (
	// instsMax bounds the installations whose clients are kept.
	instsMax = 2048
	// instsIdle is how long an installation's unused clients are kept.
	instsIdle = time.Hour
	// bucketGrace is how long an idle bucket is kept after its last look-up
	// (a write looks its bucket up, then takes its turn).
	bucketGrace = time.Minute
	// sweepEvery is how often (at most) the idle are looked for.
	sweepEvery = time.Minute
)

// instClients are one installation's clients, sharing its token source.
type instClients struct {
	itr                    *ghinstallation.Transport
	rest                   *github.Client
	graphql, graphqlWrites *githubv4.Client
	used                   time.Time
}

// bucketEntry is an installation's write pacing and its last look-up.
type bucketEntry struct {
	b    *pace.Bucket
	used time.Time
}

// inst is installation id's clients (made with a token source, its clients
// made on demand by the caller). Call with g.mu held.
func (g *GitHub) inst(id int64) *instClients {
	now := g.clock.Now()
	if in, ok := g.insts[id]; ok {
		in.used = now
		return in
	}
	g.sweepLocked(now)
	if g.instsMax > 0 && len(g.insts) >= g.instsMax {
		g.dropLRULocked(len(g.insts) - g.instsMax + 1)
	}
	in := &instClients{itr: g.newITR(id), used: now}
	if g.insts == nil {
		g.insts = map[int64]*instClients{}
	}
	g.insts[id] = in
	return in
}

// sweepLocked drops the clients unused for instsIdle and the idle buckets,
// at most once every sweepEvery. Call with g.mu held.
func (g *GitHub) sweepLocked(now time.Time) {
	if now.Sub(g.swept) < sweepEvery {
		return
	}
	g.swept = now
	for id, in := range g.insts {
		if now.Sub(in.used) >= instsIdle {
			delete(g.insts, id)
		}
	}
	for id, e := range g.buckets {
		if now.Sub(e.used) >= bucketGrace && e.b.Idle() {
			delete(g.buckets, id)
		}
	}
}

// dropLRULocked drops the n least recently used installations' clients.
// Call with g.mu held.
func (g *GitHub) dropLRULocked(n int) {
	for ; n > 0 && len(g.insts) > 0; n-- {
		var oldest int64
		var at time.Time
		first := true
		for id, in := range g.insts {
			if first || in.used.Before(at) {
				oldest, at, first = id, in.used, false
			}
		}
		delete(g.insts, oldest)
	}
}

// Cached is how many installations' clients and write buckets are kept.
func (g *GitHub) Cached() (clients, buckets int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.insts), len(g.buckets)
}

// tokenAnswers drops the repositories from GitHub's answer to an
// installation token request: ghinstallation keeps the answer with the
// token for as long as the installation's clients are kept, and each
// repository is a whole object of some 150 fields, none of which
// countersign reads there (with 1,000 installations of 5 repositories,
// they were a fifth of the live heap).
type tokenAnswers struct{ next http.RoundTripper }

// tokenAnswerMax bounds the token answer read to rewrite it; a longer one
// is handed on as it is.
const tokenAnswerMax = 8 << 20

func (t tokenAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/access_tokens") || resp.StatusCode/100 != 2 {
		return resp, err
	}
	orig := resp.Body
	body, err := io.ReadAll(io.LimitReader(orig, tokenAnswerMax+1))
	if err != nil {
		orig.Close()
		return nil, fmt.Errorf("read the installation token: %w", err)
	}
	if len(body) > tokenAnswerMax { // handed on whole
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), orig), orig}
		return resp, nil
	}
	orig.Close()
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) == nil {
		if _, ok := fields["repositories"]; ok {
			delete(fields, "repositories")
			if b, err := json.Marshal(fields); err == nil {
				body = b
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}
