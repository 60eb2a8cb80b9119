package seal

import (
	"strings"
	"testing"
)

func TestSignVerify(t *testing.T) {
	k, err := New([]byte("the key"))
	if err != nil {
		t.Fatal(err)
	}
	rec := []byte(`{"state":"review"}`)
	sig := k.Sign("task/acme/w#1", rec)
	other, _ := New([]byte("another key"))
	rotated, _ := New([]byte("a new key"), []byte("the key"))
	tests := []struct {
		name  string
		keys  *Keys
		scope string
		rec   string
		sig   string
		want  bool
	}{
		{"as signed", k, "task/acme/w#1", string(rec), sig, true},
		{"record changed", k, "task/acme/w#1", `{"state":"verified"}`, sig, false},
		{"another task's record", k, "task/acme/w#2", string(rec), sig, false},
		{"another key", other, "task/acme/w#1", string(rec), sig, false},
		{"previous key during a rotation", rotated, "task/acme/w#1", string(rec), sig, true},
		{"no signature", k, "task/acme/w#1", string(rec), "", false},
		{"unknown version", k, "task/acme/w#1", string(rec), "v2." + strings.TrimPrefix(sig, "v1."), false},
		{"truncated", k, "task/acme/w#1", string(rec), sig[:len(sig)-2], false},
		{"not base64", k, "task/acme/w#1", string(rec), "v1.!!!", false},
		{"nil keys", nil, "task/acme/w#1", string(rec), sig, false},
	}
	for _, tc := range tests {
		if got := tc.keys.Verify(tc.scope, []byte(tc.rec), tc.sig); got != tc.want {
			t.Errorf("%s: Verify = %v, want %v", tc.name, got, tc.want)
		}
	}
	if rotated.Verify("task/acme/w#1", rec, rotated.Sign("task/acme/w#1", rec)) != true {
		t.Error("a rotated key does not verify its own signature")
	}
	if sig == rotated.Sign("task/acme/w#1", rec) {
		t.Error("the new key signs like the previous one")
	}
}

func TestEmptyMaterialRefused(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

func FuzzVerify(f *testing.F) {
	k, _ := New([]byte("k"))
	f.Add("task/a#1", []byte("{}"), k.Sign("task/a#1", []byte("{}")))
	f.Add("", []byte(nil), "v1.")
	f.Fuzz(func(t *testing.T, scope string, rec []byte, sig string) {
		if k.Verify(scope, rec, sig) && sig != k.Sign(scope, rec) {
			t.Fatalf("accepted a signature that is not the key's: %q", sig)
		}
	})
}
