package rules

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// People are ids; a login is only how someone is shown (docs/design.md, Roles).
func TestUserIs(t *testing.T) {
	tests := []struct {
		name string
		a, b User
		want bool
	}{
		{"same id, same login", User{ID: 7, Login: "alice"}, User{ID: 7, Login: "alice"}, true},
		{"same id, different logins (a rename)", User{ID: 7, Login: "alice"}, User{ID: 7, Login: "alice2"}, true},
		{"same id, no login on one side", User{ID: 7}, User{ID: 7, Login: "alice"}, true},
		{"different ids, same login (a login taken over)", User{ID: 7, Login: "alice"}, User{ID: 8, Login: "alice"}, false},
		{"different ids, same login in another case", User{ID: 7, Login: "alice"}, User{ID: 8, Login: "Alice"}, false},
		{"one id unknown: same login", User{Login: "alice"}, User{ID: 7, Login: "alice"}, true},
		{"one id unknown: login in another case", User{ID: 7, Login: "alice"}, User{Login: "ALICE"}, true},
		{"one id unknown: other login", User{Login: "alice"}, User{ID: 7, Login: "alice2"}, false},
		{"both ids unknown: same login in another case", User{Login: "Bob"}, User{Login: "bob"}, true},
		{"both ids unknown: other logins", User{Login: "bob"}, User{Login: "bobby"}, false},
		{"zero users never match", User{}, User{}, false},
		{"zero and a login", User{}, User{Login: "alice"}, false},
		{"zero and an id", User{}, User{ID: 7, Login: "alice"}, false},
		{"an id without a login and a login without an id", User{ID: 7}, User{Login: "alice"}, false},
		{"empty logins, one id unknown", User{ID: 7}, User{}, false},
		{"the cast: alice renamed is alice", u("alice"), renamed(u("alice"), "alice2"), true},
		{"the cast: alice and bob", u("alice"), u("bob"), false},
		{"the cast: a login's case names the same account", u("Alice"), u("alice"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Is(tc.b); got != tc.want {
				t.Errorf("%+v.Is(%+v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := tc.b.Is(tc.a); got != tc.want {
				t.Errorf("%+v.Is(%+v) = %v, want %v (Is is symmetric)", tc.b, tc.a, got, tc.want)
			}
			ma, mb := MemberOf(tc.a, "assignee"), MemberOf(tc.b, "assignee")
			if ma.Is(tc.b) != tc.want || mb.Is(tc.a) != tc.want {
				t.Errorf("Member.Is disagrees with User.Is for %+v, %+v", tc.a, tc.b)
			}
		})
	}
}

func TestUserBasics(t *testing.T) {
	if !(User{}).IsZero() || (User{ID: 1}).IsZero() || (User{Login: "a"}).IsZero() {
		t.Error("IsZero: only the user with neither id nor login is zero")
	}
	if s := u("alice").String(); s != "alice" {
		t.Errorf("String = %q, want the login", s)
	}
	m := MemberOf(u("dave"), "author of #12")
	if m.ID != u("dave").ID || m.Login != "dave" || m.As != "author of #12" || m.User() != u("dave") {
		t.Errorf("MemberOf/User: %+v", m)
	}
	if got := Logins(us("alice", "Bob")); !reflect.DeepEqual(got, []string{"alice", "Bob"}) {
		t.Errorf("Logins = %q", got)
	}
	if got := Logins(nil); len(got) != 0 {
		t.Errorf("Logins(nil) = %q", got)
	}
	sameUsers := []struct {
		name string
		a, b []User
		want bool
	}{
		{"both empty", nil, []User{}, true},
		{"same accounts, same order", us("alice", "bob"), us("alice", "bob"), true},
		{"other order", us("alice", "bob"), us("bob", "alice"), false},
		{"one more", us("alice"), us("alice", "bob"), false},
		// A renamed assignee is news: the record must learn the new login.
		{"same account, renamed", us("alice"), []User{renamed(u("alice"), "alice2")}, false},
		{"same login, another account", us("alice"), []User{{ID: 42, Login: "alice"}}, false},
	}
	for _, tc := range sameUsers {
		if got := SameUsers(tc.a, tc.b); got != tc.want {
			t.Errorf("SameUsers %s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestUserJSON(t *testing.T) {
	for _, in := range []User{u("alice"), {Login: "bob"}, renamed(u("alice"), "alice2"), {}} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("marshal %+v: %v", in, err)
		}
		var out User
		if err := json.Unmarshal(b, &out); err != nil || out != in {
			t.Errorf("%+v -> %s -> %+v, %v: want it back", in, b, out, err)
		}
	}
	if b, _ := json.Marshal(User{Login: "bob"}); string(b) != `{"login":"bob"}` {
		t.Errorf("a user with no id marshals as %s, want no id", b)
	}
	decode := []struct {
		in      string
		want    User
		wantErr bool
	}{
		{`{"id":1003,"login":"bob"}`, User{ID: 1003, Login: "bob"}, false},
		{` {"login":"bob"}`, User{Login: "bob"}, false},
		// Records written before ids were kept have a bare login.
		{`"bob"`, User{Login: "bob"}, false},
		{` "Bob" `, User{Login: "Bob"}, false},
		{`""`, User{}, false},
		{`"copilot[bot]"`, User{Login: "copilot[bot]"}, false},
		{`5`, User{}, true},
		{`"bob`, User{}, true},
		{`{"id":"x","login":"bob"}`, User{}, true},
		{`["bob"]`, User{}, true},
	}
	for _, tc := range decode {
		var got User
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err != nil) != tc.wantErr || !tc.wantErr && got != tc.want {
			t.Errorf("decode %s = %+v, %v; want %+v (error %v)", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// legacyTask is a task record as countersign wrote it before people had ids
// (marshalled by the code of that time): every person is a bare login.
const legacyTask = `{"repo":"acme/app","number":7,"title":"Login form","state":"verified","opener":"lead","attempt":1,` +
	`"assignees":["alice"],"builders":[{"login":"alice","as":"assignee"},{"login":"dave","as":"author of #12"}],` +
	`"prs":[{"number":12,"author":"dave","head":"h1","open":true}],` +
	`"approvals":[{"by":"carol","head":"h1","pr":12,"at":"2025-03-01T09:04:00Z"}],"approvers":["carol"],` +
	`"verifier":"bob","verified_at":"2025-03-01T09:05:00Z",` +
	`"rejections":[{"by":"erin","at":"2025-03-01T09:03:00Z","reason":"no","attempt":1}],` +
	`"history":[{"to":"pending","actor":"lead","at":"2025-03-01T09:00:00Z","why":"issue opened"},` +
	`{"from":"completed","to":"verified","actor":"bob","at":"2025-03-01T09:05:00Z","why":"/verify"}]}`

func TestLegacyTaskRecordDecodes(t *testing.T) {
	var got Task
	if err := json.Unmarshal([]byte(legacyTask), &got); err != nil {
		t.Fatalf("a record from before ids does not decode: %v", err)
	}
	at := func(m int) time.Time { return time.Date(2025, 3, 1, 9, m, 0, 0, time.UTC) }
	want := Task{Repo: "acme/app", Number: 7, Title: "Login form", State: Verified, Opener: User{Login: "lead"}, Attempt: 1,
		Assignees: []User{{Login: "alice"}},
		Builders:  []Member{{Login: "alice", As: "assignee"}, {Login: "dave", As: "author of #12"}},
		PRs:       []LinkedPR{{Number: 12, Author: User{Login: "dave"}, Head: "h1", Open: true}},
		Approvals: []Approval{{By: User{Login: "carol"}, Head: "h1", PR: 12, At: at(4)}},
		Approvers: []User{{Login: "carol"}},
		Verifier:  User{Login: "bob"}, VerifiedAt: at(5),
		Rejections: []Rejection{{By: User{Login: "erin"}, At: at(3), Reason: "no", Attempt: 1}},
		History: []Transition{{To: Pending, Actor: "lead", At: at(0), Why: "issue opened"},
			{From: Completed, To: Verified, Actor: "bob", At: at(5), Why: "/verify"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	// The people of an old record, known by login only, are still who they
	// were to people the webhooks now name with ids.
	if !got.IsBuilder(u("Alice")) || !got.IsBuilder(u("dave")) || got.IsBuilder(u("erin")) {
		t.Errorf("builders %v: want alice and dave by login", got.Builders)
	}
	if !got.IsApprover(u("carol")) || got.IsApprover(u("bob")) {
		t.Errorf("approvers %v: want carol by login", got.Approvers)
	}
	// Written again, it keeps what it knew and reads back the same.
	b, err := json.Marshal(&got)
	if err != nil {
		t.Fatal(err)
	}
	var again Task
	if err := json.Unmarshal(b, &again); err != nil || !reflect.DeepEqual(again, got) {
		t.Errorf("re-encoded record %s reads back as %+v, %v", b, again, err)
	}
}

// An event queued before ids were kept (actor, author and assignees as bare
// logins) still decodes.
func TestLegacyEventDecodes(t *testing.T) {
	in := `{"kind":"pr.reviewed","actor":"carol","at":"2025-03-01T09:04:00Z",` +
		`"issue":{"repo":"acme/app","number":7,"author":"lead","assignees":["alice","dave"]},` +
		`"pr":{"number":12,"author":"dave","head":"h1","open":true},` +
		`"review":{"reviewer":"carol","state":"approved","head":"h1"}}`
	var ev Event
	if err := json.Unmarshal([]byte(in), &ev); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if ev.Actor != (User{Login: "carol"}) || ev.Issue.Author != (User{Login: "lead"}) ||
		!reflect.DeepEqual(ev.Issue.Assignees, []User{{Login: "alice"}, {Login: "dave"}}) ||
		ev.PR == nil || ev.PR.Author != (User{Login: "dave"}) || ev.Review == nil || ev.Review.Reviewer != (User{Login: "carol"}) {
		t.Errorf("decoded %+v", ev)
	}
}

func FuzzUserJSON(f *testing.F) {
	for _, s := range []string{`"bob"`, `{"id":1,"login":"bob"}`, `{"login":""}`, `null`, `5`, `""`, `{"id":-1}`, `"\u0000"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var a User
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			return
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("%+v (from %q) does not marshal: %v", a, in, err)
		}
		var c User
		if err := json.Unmarshal(b, &c); err != nil || c != a {
			t.Fatalf("%q -> %+v -> %s -> %+v, %v", in, a, b, c, err)
		}
		if strings.HasPrefix(strings.TrimSpace(in), `"`) && a.ID != 0 {
			t.Fatalf("a bare login %q gave an id: %+v", in, a)
		}
	})
}
