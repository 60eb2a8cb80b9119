package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/app/mcp"
	"github.com/countersign/countersign/internal/mcpdemo"
)

// A tool call over HTTP ends when its client goes away: the server stops
// reading GitHub for a verdict nobody will receive. Both for this SDK's
// client and for a client of an older protocol version (2025-06-18), whose
// calls the SDK does not tie to their request.
func TestHTTPCallEndsWhenTheClientGoesAway(t *testing.T) {
	for _, proto := range []string{"sdk", "2025-06-18"} {
		t.Run(proto, func(t *testing.T) {
			w, ctx := world(t)
			srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(w.Options(mcp.BearerToken))))
			t.Cleanup(srv.Close)
			carol := agent(t, ctx, w, "carol")
			task := call(t, ctx, carol, "create_task", map[string]any{"repo": w.Repo(), "title": "Abandoned", "assignees": []string{"alice"}}).Out["task"].(string)
			if err := w.Settle(ctx); err != nil {
				t.Fatal(err)
			}
			tok := w.GH().AddToken("bob")
			w.GH().SetBotDown(true) // countersign never answers: the call would wait its whole wait
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- verifyOver(cctx, proto, srv.URL, tok, task) }()
			// Once bob's call polls GitHub, bob goes away.
			for bobs(w) < 5 {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			<-done
			time.Sleep(500 * time.Millisecond)
			n := bobs(w)
			time.Sleep(time.Second) // 20 polls' time
			if m := bobs(w); m != n {
				t.Fatalf("bob's abandoned verify_task went on reading GitHub: %d requests, then %d", n, m)
			}
		})
	}
}

// verifyOver calls verify_task on task as tok's person: with this SDK's client
// (proto "sdk"), or as one raw POST of protocol version proto.
func verifyOver(ctx context.Context, proto, url, tok, task string) error {
	if proto == "sdk" {
		cs, err := mcpdemo.HTTPAgent(ctx, url, "bob", tok)
		if err != nil {
			return err
		}
		defer cs.Close()
		_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "verify_task", Arguments: map[string]any{"task": task}})
		return err
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_task","arguments":{"task":%q}}}`, task)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", proto)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func bobs(w *mcpdemo.World) int {
	n := 0
	for _, r := range w.GH().Requests() {
		if r.User == "bob" {
			n++
		}
	}
	return n
}
