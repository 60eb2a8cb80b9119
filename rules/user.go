package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// User is a GitHub account. Its ID is who it is; its Login is only how it is
// shown: accounts get renamed, and a login given up is free for someone else
// to take (docs/design.md, Roles). ID is 0 when GitHub did not say (a login named in the
// configuration, a record from before ids were kept).
type User struct {
	ID    int64  `json:"id,omitempty"`
	Login string `json:"login"`
}

// Is reports whether u and o are the same account: the same id when both
// ids are known, else the same login (logins are case-insensitive). Two
// different ids are never the same account, whatever their logins say.
func (u User) Is(o User) bool {
	if u.ID != 0 && o.ID != 0 {
		return u.ID == o.ID
	}
	return u.Login != "" && SameLogin(u.Login, o.Login)
}

// IsZero reports whether u names no one.
func (u User) IsZero() bool { return u.ID == 0 && u.Login == "" }

// String is the login, how people see the account.
func (u User) String() string { return u.Login }

// UnmarshalJSON reads a user, or a bare login as records written before ids
// were kept have it.
func (u *User) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var login string
		if err := json.Unmarshal(b, &login); err != nil {
			return err
		}
		*u = User{Login: login}
		return nil
	}
	type plain User
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("user: %w", err)
	}
	*u = User(p)
	return nil
}

// Logins are the users' logins, for mentions and display.
func Logins(users []User) []string {
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = u.Login
	}
	return out
}

// SameUsers reports whether a and b name the same accounts in the same order.
func SameUsers(a, b []User) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Is(b[i]) || a[i].Login != b[i].Login {
			return false
		}
	}
	return true
}

// loginOnly is a user known only by a login (from the configuration).
func loginOnly(login string) User { return User{Login: strings.TrimPrefix(login, "@")} }
