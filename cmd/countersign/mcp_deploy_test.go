package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// One malformed line on stdio (not JSON, or JSON that is no JSON-RPC message)
// is answered with a JSON-RPC error (-32700 parse error, -32600 invalid
// request, id null) and the server goes on: a real client then works.
func TestMCPStdioSurvivesMalformedLines(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, []string{"GITHUB_TOKEN=ghp_unused", "GITHUB_API_URL=http://127.0.0.1:1/"}, "mcp")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("mcp stderr:\n%s", stderr.String())
		}
	}()
	out := bufio.NewReader(stdout)
	for _, c := range []struct {
		line string
		code float64
		id   string
	}{
		{"this is not JSON", -32700, "null"},
		{`{"hello": "world"}`, -32600, "null"},
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700, "null"},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5"},
	} {
		if _, err := io.WriteString(stdin, c.line+"\n"); err != nil {
			t.Fatalf("writing %q: %v (the server is gone)", c.line, err)
		}
		reply, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("no reply to %q: %v", c.line, err)
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code float64 `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(reply), &m); err != nil || m.JSONRPC != "2.0" || string(m.ID) != c.id || m.Error.Code != c.code {
			t.Fatalf("reply to %q: %s, want a JSON-RPC error %v with id %s", c.line, reply, c.code, c.id)
		}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "after-bad-lines", Version: "1"}, nil).Connect(ctx,
		&sdk.IOTransport{Reader: io.NopCloser(out), Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("a client after the bad lines: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 14 {
		t.Fatalf("tools/list after the bad lines: %v, %v", tools, err)
	}
	cs.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the server did not end cleanly when its client hung up: %v", err)
	}
}

// --tls-cert and --tls-key go together: one without the other is refused.
func TestMCPTLSNeedsCertAndKey(t *testing.T) {
	for _, args := range [][]string{
		{"mcp", "--listen", "127.0.0.1:0", "--tls-cert", "cert.pem"},
		{"mcp", "--listen", "127.0.0.1:0", "--tls-key", "key.pem"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--tls-cert") || !strings.Contains(errb.String(), "--tls-key") {
			t.Fatalf("%v: exit %d, stderr %q; want 2 naming both", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	t.Setenv("GITHUB_TOKEN", "ghp_x")
	if code := run([]string{"mcp", "--allowed-hosts", "mcp.example.com"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--listen") {
		t.Fatalf("--allowed-hosts over stdio: exit %d, stderr %q; want 2 asking for --listen", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"mcp", "--listen", "127.0.0.1:0", "--allowed-origins", "https://mcp.example.com/path"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no origin") {
		t.Fatalf("an origin with a path: exit %d, stderr %q; want 2", code, errb.String())
	}
	errb.Reset()
	dir := t.TempDir()
	code := run([]string{"mcp", "--listen", "127.0.0.1:0", "--tls-cert", filepath.Join(dir, "no.pem"), "--tls-key", filepath.Join(dir, "no.key")}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "no.pem") {
		t.Fatalf("missing certificate files: exit %d, stderr %q; want 2 naming the file", code, errb.String())
	}
}

// `--listen :PORT` listens on loopback only, and with --tls-cert/--tls-key
// it speaks TLS.
func TestMCPListenBarePortIsLoopbackOverTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := command(ctx, []string{"GITHUB_API_URL=http://127.0.0.1:1/"}, "mcp", "--listen", ":"+port, "--tls-cert", certFile, "--tls-key", keyFile)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		defer close(addr)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m struct{ Msg, Addr, Scheme string }
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "MCP server listening" {
				addr <- m.Addr + " " + m.Scheme
			}
			t.Log(sc.Text())
		}
	}()
	got, ok := <-addr
	if !ok {
		t.Fatal("the server ended without saying where it listens")
	}
	if got != "127.0.0.1:"+port+" https" {
		t.Fatalf("--listen :%s listens on %q, want 127.0.0.1:%s https", port, got, port)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://127.0.0.1:" + port + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz over TLS: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://127.0.0.1:" + port + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP was served on the TLS port")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mcp did not exit cleanly on SIGTERM: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "countersign-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
