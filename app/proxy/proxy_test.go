package proxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sse "github.com/tmaxmax/go-sse"
)

const secret = "proxy-test-webhook-secret"

func sign(b []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(b)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// recorder keeps what the handler was given.
type recorder struct {
	body   []byte
	header http.Header
	method string
	path   string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.body, _ = io.ReadAll(req.Body)
	r.header, r.method, r.path = req.Header.Clone(), req.Method, req.URL.Path
	w.WriteHeader(http.StatusAccepted)
}

// Every real payload sample, as smee sends it (GitHub's compact JSON parsed
// and serialised again, with the webhook's headers as lowercase keys), is
// handed on as POST /webhook with the bytes GitHub signed and GitHub's
// headers only; a body a proxy indented is handed on compact when that is
// what was signed.
func TestDeliverHandsOnWhatGitHubSigned(t *testing.T) {
	var files []string
	filepath.WalkDir(filepath.Join("..", "..", "testdata", "github-webhooks"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".payload.json") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 50 {
		t.Fatalf("only %d payload samples", len(files))
	}
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		var compact, indented bytes.Buffer
		if json.Compact(&compact, raw) != nil {
			continue
		}
		json.Indent(&indented, compact.Bytes(), "", "  ")
		sig := sign(compact.Bytes())
		for _, body := range [][]byte{compact.Bytes(), indented.Bytes()} {
			data := fmt.Sprintf(`{"host":"smee.io","content-length":"%d","x-github-event":"issues","x-github-delivery":"d-1","x-hub-signature-256":%q,"user-agent":"GitHub-Hookshot/1","body":%s,"query":{},"timestamp":1}`,
				len(body), sig, body)
			rec := &recorder{}
			p := New(Config{URL: "http://x/chan", Handler: rec, Secret: []byte(secret)})
			p.deliver(context.Background(), sse.Event{Data: data})
			if !bytes.Equal(rec.body, compact.Bytes()) {
				t.Fatalf("%s: handed on %d bytes, not the %d GitHub signed", f, len(rec.body), compact.Len())
			}
			if rec.method != http.MethodPost || rec.path != "/webhook" || rec.header.Get("X-Hub-Signature-256") != sig ||
				rec.header.Get("X-GitHub-Delivery") != "d-1" || rec.header.Get("Content-Type") != "application/json" ||
				rec.header.Get("Host") != "" || rec.header.Get("Content-Length") != "" {
				t.Fatalf("%s: request %s %s, headers %v", f, rec.method, rec.path, rec.header)
			}
		}
	}
}

// smee's ready and ping events, and events that are no delivery, reach no handler.
func TestDeliverSkipsWhatIsNoDelivery(t *testing.T) {
	rec := &recorder{}
	p := New(Config{URL: "http://x/chan", Handler: rec})
	for _, data := range []string{"{}", "not json", `{"x-github-event":"issues"}`} {
		p.deliver(context.Background(), sse.Event{Data: data})
	}
	if rec.method != "" {
		t.Fatalf("handler called: %s %s", rec.method, rec.path)
	}
}
