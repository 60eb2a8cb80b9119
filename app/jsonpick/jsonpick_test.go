package jsonpick

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Pick gives each member encoding/json would decode, for every real
// webhook payload of the test data and for hand-made edge cases.
func TestPickAgreesWithEncodingJSON(t *testing.T) {
	keys := []string{"action", "issue", "sender", "repository", "installation", "comment", "x", "a\"b"}
	cases := []string{
		`{}`,
		` { "action" : "opened" , "x" : [1, {"y": "}]\"{"}], "issue": {"number": 3}} `,
		`{"action":"a","action":"b"}`,
		`{"x":null,"sender":{"type":"Bot","login":"a[bot]"},"n":-1.5e3,"t":true}`,
		`{"a\"b":1}`,
		`{"Action":"x"}`,
		`{"action":"a","SENDER":{}}`,
		`[1,2]`,
		`{"action":"opened"`,
		`{"action":"opened",}`,
		`not json`,
		``,
	}
	dir := "../../testdata/github-webhooks"
	if files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json")); len(files) > 0 {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, string(b))
		}
	} else {
		t.Log("no webhook payloads in " + dir + ": hand-made cases only")
	}
	for _, c := range cases {
		var want map[string]json.RawMessage
		werr := json.Unmarshal([]byte(c), &want)
		vals, ok := Pick([]byte(c), keys...)
		if !ok {
			if werr == nil && c != `{"a\"b":1}` && c != `{"Action":"x"}` && c != `{"action":"a","SENDER":{}}` {
				t.Errorf("Pick(%.80q) = not ok; encoding/json reads it", c)
			}
			continue
		}
		if werr != nil {
			t.Errorf("Pick(%.80q) ok; encoding/json: %v", c, werr)
			continue
		}
		for i, k := range keys {
			var got, exp any
			if vals[i] != nil {
				if err := json.Unmarshal(vals[i], &got); err != nil {
					t.Errorf("Pick(%.80q)[%s] = %.80q: %v", c, k, vals[i], err)
				}
			}
			if raw, present := want[k]; present {
				_ = json.Unmarshal(raw, &exp)
			}
			if (vals[i] == nil) != (want[k] == nil) || !reflect.DeepEqual(got, exp) {
				t.Errorf("Pick(%.80q)[%s] = %.80q, want %.80q", c, k, vals[i], want[k])
			}
		}
	}
}

func BenchmarkPick(b *testing.B) {
	payload, err := os.ReadFile("../../testdata/github-webhooks/issues/labeled.payload.json")
	if err != nil {
		b.Skip(err)
	}
	b.Run("pick", func(b *testing.B) {
		for b.Loop() {
			if _, ok := Pick(payload, "action", "sender"); !ok {
				b.Fatal("not ok")
			}
		}
	})
	b.Run("valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(payload)
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		for b.Loop() {
			var v struct {
				Action string `json:"action"`
				Sender struct {
					Type string `json:"type"`
				} `json:"sender"`
			}
			if err := json.Unmarshal(payload, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// valid is json.Valid.
func TestValidIsJSONValid(t *testing.T) {
	cases := []string{``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5e`, `1.5e+3`, `1E-2`, `.5`, `1e5x`, `"a`, `"\u00e9\ud83d"`, `"\u00g0"`, `"\x"`, "\"a\tb\"",
		`"é"`, "\"\xff\"", `tru`, `true `, ` null`, `nul`, `falsey`, `[]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{a:1}`,
		`{"a":[{"b":{}}],"c":"d"}`, `[[[[]]]]`, `{"a":1}{`, "\n{\"a\" :\r\t1 }\n", `"\/"`, `[-1.0e-0]`, `{"":""}`}
	deep := ""
	for range 10001 {
		deep = "[" + deep + "]"
	}
	cases = append(cases, deep, deep[1:len(deep)-1])
	for _, c := range cases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%.40q) = %v, json.Valid: %v", c, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u0041",true,null]}`, `[`, `"\\"`, `-0.0E+1`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Errorf("valid(%q) = %v, json.Valid: %v", b, got, want)
		}
	})
}
