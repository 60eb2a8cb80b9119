package app

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func TestLoadSettings(t *testing.T) {
	key := testKeyPEM(t)
	dir := t.TempDir()
	keyPath := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	badKey := filepath.Join(dir, "bad.pem")
	os.WriteFile(badKey, []byte("not a key"), 0o600)
	good := map[string]string{
		"GITHUB_APP_ID": "42", "GITHUB_PRIVATE_KEY_PATH": keyPath, "GITHUB_WEBHOOK_SECRET": "s3cret-for-the-tests",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range good {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string // substring naming the setting; "" for success
		check   func(t *testing.T, s Settings)
	}{
		{name: "defaults", env: good, check: func(t *testing.T, s Settings) {
			if s.AppID != 42 || s.APIURL != "https://api.github.com/" || s.Listen != ":8080" ||
				s.DataPath != "countersign.db" || s.Workers != 8 || string(s.WebhookSecret) != "s3cret-for-the-tests" {
				t.Errorf("unexpected settings %+v", s)
			}
		}},
		{name: "flags override environment", env: good,
			args: []string{"--listen", "127.0.0.1:9999", "--github-api-url", "http://ghe.example/api/v3", "--workers", "3"},
			check: func(t *testing.T, s Settings) {
				if s.Listen != "127.0.0.1:9999" || s.APIURL != "http://ghe.example/api/v3/" || s.Workers != 3 {
					t.Errorf("flags not applied: %+v", s)
				}
			}},
		{name: "key inline with escaped newlines", env: with("GITHUB_PRIVATE_KEY_PATH", "", "GITHUB_PRIVATE_KEY", strings.ReplaceAll(string(key), "\n", `\n`))},
		{name: "redis url", env: with("REDIS_URL", "redis://127.0.0.1:6379/0"), check: func(t *testing.T, s Settings) {
			if s.RedisURL == "" || s.DataPath != "" {
				t.Errorf("redis not chosen: %+v", s)
			}
		}},
		{name: "missing app id", env: with("GITHUB_APP_ID", ""), wantErr: "GITHUB_APP_ID (--app-id) is not set"},
		{name: "non-numeric app id", env: with("GITHUB_APP_ID", "abc"), wantErr: "GITHUB_APP_ID (--app-id): \"abc\" is not a positive number"},
		{name: "no key", env: with("GITHUB_PRIVATE_KEY_PATH", ""), wantErr: "no private key"},
		{name: "unreadable key", env: with("GITHUB_PRIVATE_KEY_PATH", filepath.Join(dir, "missing.pem")), wantErr: "GITHUB_PRIVATE_KEY_PATH (--private-key-path): cannot read the key"},
		{name: "invalid key", env: with("GITHUB_PRIVATE_KEY_PATH", badKey), wantErr: "not a PEM private key"},
		{name: "both keys", env: with("GITHUB_PRIVATE_KEY", string(key)), wantErr: "both set"},
		{name: "no secret", env: with("GITHUB_WEBHOOK_SECRET", ""), wantErr: "GITHUB_WEBHOOK_SECRET (--webhook-secret) is not set"},
		{name: "bad url", env: with("GITHUB_API_URL", "ftp://x"), wantErr: "GITHUB_API_URL (--github-api-url)"},
		{name: "url without host", env: with("GITHUB_API_URL", "http://"), wantErr: "GITHUB_API_URL"},
		{name: "bad redis url", env: with("REDIS_URL", "http://nope"), wantErr: "REDIS_URL (--redis-url)"},
		{name: "bad redis url keeps its password", env: with("REDIS_URL", "redis://user:s3cret@host:bad/0"), wantErr: "not a valid redis"},
		{name: "bad workers", env: with("COUNTERSIGN_WORKERS", "0"), wantErr: "COUNTERSIGN_WORKERS"},
		{name: "record keys", env: with("COUNTERSIGN_RECORD_KEY", "0123456789abcdef-new"), args: []string{"--record-key-previous", "0123456789abcdef-old"},
			check: func(t *testing.T, s Settings) {
				if string(s.RecordKey) != "0123456789abcdef-new" || string(s.RecordKeyPrevious) != "0123456789abcdef-old" {
					t.Errorf("record keys %q, %q", s.RecordKey, s.RecordKeyPrevious)
				}
			}},
		{name: "short record key", env: with("COUNTERSIGN_RECORD_KEY", "short"), wantErr: "COUNTERSIGN_RECORD_KEY (--record-key): shorter than 16"},
		{name: "short previous record key", env: with("COUNTERSIGN_RECORD_KEY_PREVIOUS", "short"), wantErr: "COUNTERSIGN_RECORD_KEY_PREVIOUS (--record-key-previous)"},
		{name: "write pacing defaults to GitHub's secondary limits", env: good, check: func(t *testing.T, s Settings) {
			if s.WritesPerMinute != 80 || s.WritesPerHour != 500 || s.WriteMargin != 0.9 || s.WriteHeadroom != 0.2 {
				t.Errorf("writes per minute %d, per hour %d, margin %v, headroom %v; want 80, 500, 0.9, 0.2", s.WritesPerMinute, s.WritesPerHour, s.WriteMargin, s.WriteHeadroom)
			}
		}},
		{name: "write pacing set", env: with("COUNTERSIGN_WRITES_PER_MINUTE", "40"), args: []string{"--writes-per-hour", "0"},
			check: func(t *testing.T, s Settings) {
				if s.WritesPerMinute != 40 || s.WritesPerHour != 0 {
					t.Errorf("writes per minute %d, per hour %d; want 40, 0", s.WritesPerMinute, s.WritesPerHour)
				}
			}},
		{name: "bad writes per minute", env: with("COUNTERSIGN_WRITES_PER_MINUTE", "-1"), wantErr: `COUNTERSIGN_WRITES_PER_MINUTE (--writes-per-minute): "-1" is not a number from 0 (off)`},
		{name: "writes per minute not a number", env: with("COUNTERSIGN_WRITES_PER_MINUTE", "80/min"), wantErr: "COUNTERSIGN_WRITES_PER_MINUTE"},
		{name: "bad writes per hour", env: with("COUNTERSIGN_WRITES_PER_HOUR", "1e9"), wantErr: "COUNTERSIGN_WRITES_PER_HOUR (--writes-per-hour)"},
		{name: "write margin and headroom set", env: with("COUNTERSIGN_WRITE_MARGIN", "1"), args: []string{"--write-headroom", "0"},
			check: func(t *testing.T, s Settings) {
				if s.WriteMargin != 1 || s.WriteHeadroom != 0 {
					t.Errorf("margin %v, headroom %v; want 1, 0", s.WriteMargin, s.WriteHeadroom)
				}
			}},
		{name: "bad write margin", env: with("COUNTERSIGN_WRITE_MARGIN", "0"), wantErr: `COUNTERSIGN_WRITE_MARGIN (--write-margin): "0" is not a number from 0.1 to 1`},
		{name: "bad write headroom", env: with("COUNTERSIGN_WRITE_HEADROOM", "1"), wantErr: "COUNTERSIGN_WRITE_HEADROOM (--write-headroom)"},
		{name: "write headroom not a number", env: with("COUNTERSIGN_WRITE_HEADROOM", "NaN"), wantErr: "COUNTERSIGN_WRITE_HEADROOM"},
		{name: "bad log level", env: with("COUNTERSIGN_LOG_LEVEL", "loud"), wantErr: "COUNTERSIGN_LOG_LEVEL"},
		{name: "stray argument", env: good, args: []string{"extra"}, wantErr: "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := LoadSettings(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret-for-the-tests") || strings.Contains(err.Error(), "PRIVATE KEY-----") {
					t.Fatalf("error leaks a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}
