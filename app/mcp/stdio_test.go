package mcp_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/app/mcp/ghread"
)

// gate holds the first comment posted to GitHub until it is opened.
type gate struct {
	once    sync.Once
	arrived chan struct{}
	open    chan struct{}
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/comments") {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.arrived)
			<-g.open
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A malformed line that arrives over stdio while an action waits for its
// verdict does not end the session: the action still gets its verdict, and
// the client goes on.
func TestStdioMalformedLineKeepsTheVerdictInFlight(t *testing.T) {
	w, ctx := world(t)
	repo := w.Repo()
	carol := agent(t, ctx, w, "carol")
	task := call(t, ctx, carol, "create_task", map[string]any{"repo": repo, "title": "Over stdio", "assignees": []string{"alice"}}).Out["task"].(string)

	g := &gate{arrived: make(chan struct{}), open: make(chan struct{})}
	opts := w.Options(mcp.StaticToken(w.GH().AddToken("alice")))
	opts.Dial = ghread.RESTDialer(w.GH().URL(), g)
	inR, inW := io.Pipe()   // the server's stdin
	outR, outW := io.Pipe() // its stdout
	done := make(chan error, 1)
	go func() { done <- mcp.NewServer(opts).Run(ctx, mcp.StdioTransport(inR, outW)) }()
	// The replies to the malformed lines (id null) are the test's: the Go
	// SDK's client cannot read a response without an id, and ends its
	// session on one.
	clientR, clientW := io.Pipe()
	refusals := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"id":null`) {
				refusals <- sc.Text()
				continue
			}
			if _, err := clientW.Write(append(sc.Bytes(), '\n')); err != nil {
				return
			}
		}
		clientW.Close()
	}()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "alice-agent", Version: "1"}, nil).Connect(ctx,
		&sdk.IOTransport{Reader: clientR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	verdict := make(chan error, 1)
	var r map[string]any
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "start_task", Arguments: map[string]any{"task": task}})
		if err == nil {
			r, _ = res.StructuredContent.(map[string]any)
		}
		verdict <- err
	}()
	<-g.arrived // start_task is in flight: its /start comment is on its way
	for _, c := range []struct{ bad, code string }{
		{"not JSON at all\n", `"code":-32700`},
		{`{"hello":"world"}` + "\n", `"code":-32600`},
	} {
		if _, err := io.WriteString(inW, c.bad); err != nil {
			t.Fatalf("writing %q: %v", c.bad, err)
		}
		var got string
		select {
		case got = <-refusals:
		case err := <-done:
			t.Fatalf("the server ended on the malformed line %q, with no reply: %v", c.bad, err)
		case <-ctx.Done():
			t.Fatalf("no reply to the malformed line %q", c.bad)
		}
		if !strings.Contains(got, c.code) || !strings.Contains(got, `"jsonrpc":"2.0"`) {
			t.Fatalf("reply to %q: %s, want a JSON-RPC error with %s", c.bad, got, c.code)
		}
	}
	close(g.open)
	if err := <-verdict; err != nil {
		t.Fatalf("start_task after malformed lines: %v", err)
	}
	if r["accepted"] != true || r["state"] != "in-progress" {
		t.Fatalf("start_task's verdict: %v, want accepted, in-progress", r)
	}
	if res := call(t, ctx, cs, "task_status", map[string]any{"task": task}); res.Error || res.Out["state"] != "in-progress" {
		t.Fatalf("task_status after the malformed lines: %s", res.Text)
	}
	cs.Close()
	inW.Close()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Logf("server ended: %v", err)
	}
}
