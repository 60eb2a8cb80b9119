package app_test

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/app"
)

// Issue 11 item 12: only X-Hub-Signature-256 authenticates a delivery; a
// delivery that can never be queued is a 4xx (GitHub does not redeliver it in
// vain); a body that does not arrive in time is 408, not a bad signature.
func TestIntakeTightening(t *testing.T) {
	h := newHarness(t, func(s *app.Settings) { s.BodyTimeout = 300 * time.Millisecond })
	payload := fixture(t, "issues/assigned.with-installation.payload.json")

	t.Run("sha1 only is refused", func(t *testing.T) {
		m := hmac.New(sha1.New, []byte(testSecret))
		m.Write(payload)
		req, _ := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "sha1-only")
		req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("sha1-signed delivery: %d, want 401", resp.StatusCode)
		}
	})

	t.Run("a sha256 header holding a sha1 signature is refused", func(t *testing.T) {
		m := hmac.New(sha1.New, []byte(testSecret))
		m.Write(payload)
		req, _ := http.NewRequest(http.MethodPost, h.url+"/webhook", bytes.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "sha1-in-256")
		req.Header.Set("X-Hub-Signature-256", "sha1="+hex.EncodeToString(m.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("sha1 signature in the sha256 header: %d, want 401", resp.StatusCode)
		}
	})

	t.Run("a delivery that can never be queued is 400", func(t *testing.T) {
		long := fmt.Sprintf(`{"action":"opened","repository":{"full_name":"acme/%s"},"installation":{"id":7},"issue":{"number":1}}`,
			strings.Repeat("x", 5000))
		if resp := h.post("issues", "too-long-key", []byte(long), true); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("unqueueable delivery: %d, want 400", resp.StatusCode)
		}
		if resp := h.post("issues", strings.Repeat("d", 5000), payload, true); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("delivery id over the store's limit: %d, want 400", resp.StatusCode)
		}
	})

	t.Run("a body that stalls is 408", func(t *testing.T) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: issues\r\n"+
			"X-GitHub-Delivery: slow\r\nX-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n", signature(payload, testSecret), len(payload))
		conn.Write(payload[:10]) // and then nothing
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("stalled body: %d, want 408", resp.StatusCode)
		}
	})

	h.settle()
	st, _ := h.store.Stats(t.Context())
	if st.Queued != 0 {
		t.Fatalf("refused deliveries were queued: %+v", st)
	}
	_, metrics := h.get("/metrics")
	for _, want := range []string{
		`countersign_webhook_deliveries_total{event="issues",outcome="bad_signature"} 2`,
		`countersign_webhook_deliveries_total{event="issues",outcome="unqueueable"} 2`,
		`countersign_webhook_deliveries_total{event="issues",outcome="timeout"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
