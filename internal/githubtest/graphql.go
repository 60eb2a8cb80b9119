package githubtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// This file is the fake's GraphQL API (POST /graphql; GitHub Enterprise
// Server: POST /api/graphql): a small executor of GraphQL queries over the
// part of GitHub's schema countersign reads, the commits of a pull request and
// who GitHub says wrote them:
//
//	repository(owner, name) { pullRequest(number) { number headRefOid
//	  commits(first, after) { totalCount pageInfo { hasNextPage endCursor }
//	    nodes { commit { oid message
//	      authors(first, after) { totalCount pageInfo {...} nodes { name email user { databaseId login } } }
//	      author { name email user {...} } committer { name email user {...} } } } } } }
//
// Like GitHub it answers 200 with "errors" for a query it cannot run (an
// unknown field, a missing argument) and 401 without a valid token; a
// repository the token cannot see is null with a NOT_FOUND error. A commit's
// authors are its git author then its Co-authored-by: trailers, each resolved
// to a user by a verified email (SetEmails) or a users.noreply.github.com
// address, as the commit page shows them.

func (s *Server) graphqlRoutes(h routeFunc) {
	h("POST", "/graphql", authToken, s.graphql)
	h("POST", "/api/graphql", authToken, s.graphql)
}

// SetEmails records login's verified email addresses: GitHub resolves commit
// authors and co-authors by them.
func (s *Server) SetEmails(login string, emails ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range emails {
		s.emails[strings.ToLower(strings.TrimSpace(e))] = login
	}
}

// noreplyRE is GitHub's private commit email: [ID+]login@users.noreply.github.com.
var noreplyRE = regexp.MustCompile(`(?i)^(?:(\d+)\+)?([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\[bot\])?)@users\.noreply\.github\.com$`)

// userByEmail is the login GitHub resolves a commit email to, "" if none.
// Call with s.mu held.
func (s *Server) userByEmail(email string) string {
	email = strings.ToLower(strings.TrimSpace(email))
	if login, ok := s.emails[email]; ok {
		return login
	}
	m := noreplyRE.FindStringSubmatch(email)
	if m == nil {
		return ""
	}
	login := m[2]
	if _, person := s.userIDs[strings.ToLower(login)]; !person && m[1] == "" {
		// A bot's commits (commitEmail drops the [bot] its real address
		// keeps, which the webhooks' email format refuses) are the bot's
		// when no person of that name is known.
		if _, bot := s.userIDs[strings.ToLower(login)+"[bot]"]; bot {
			login += "[bot]"
		}
	}
	for k := range s.userIDs { // the login as GitHub spells it
		if strings.EqualFold(k, login) {
			login = k
		}
	}
	if m[1] != "" && m[1] != strconv.FormatInt(s.userID(login), 10) {
		return ""
	}
	return login
}

// coAuthorRE is a Co-authored-by: trailer.
var coAuthorRE = regexp.MustCompile(`(?im)^[ \t]*co-authored-by:[ \t]*(.*?)[ \t]*<([^<>\s]+)>[ \t]*$`)

type gqlActor struct{ name, email string }

// commitAuthors are the commit's git author, then its co-authors.
func commitAuthors(c *commitState) []gqlActor {
	out := []gqlActor{{c.author, c.authorEmail()}}
	for _, m := range coAuthorRE.FindAllStringSubmatch(c.message, -1) {
		out = append(out, gqlActor{m[1], m[2]})
	}
	return out
}

// ---- the executor ----

type gqlError struct {
	Message   string         `json:"message"`
	Type      string         `json:"type,omitempty"`
	Path      []any          `json:"path,omitempty"`
	Locations []gqlLocation  `json:"locations,omitempty"`
	Extra     map[string]any `json:"extensions,omitempty"`
}

type gqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// gqlObject is a value of an object type: typ names it in errors; field
// resolves one of its fields (ok false: no such field).
type gqlObject struct {
	typ   string
	field func(name string, args map[string]any) (v any, ok bool, err error)
}

func (s *Server) graphql(c *apiCall) {
	var req struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.Unmarshal(c.info.body, &req); err != nil || strings.TrimSpace(req.Query) == "" {
		c.json(http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"})
		return
	}
	op, err := parseGQL(req.Query)
	if err != nil {
		c.json(http.StatusOK, map[string]any{"errors": []gqlError{{Message: err.Error()}}})
		return
	}
	for _, v := range op.vars {
		if _, ok := req.Variables[v.name]; !ok && v.required {
			c.json(http.StatusOK, map[string]any{"errors": []gqlError{{Message: fmt.Sprintf("Variable $%s of type %s was provided invalid value", v.name, v.typ)}}})
			return
		}
	}
	ex := &gqlExec{vars: req.Variables}
	root := s.gqlQuery(c)
	if op.mutation {
		root = s.gqlMutation(c) // projects.go
	}
	data := ex.selectSet(root, op.sel, nil)
	out := map[string]any{"data": data}
	if len(ex.errs) > 0 {
		out["errors"] = ex.errs
		if ex.fatal {
			out = map[string]any{"errors": ex.errs}
		}
	}
	c.json(http.StatusOK, out)
}

type gqlExec struct {
	vars  map[string]any
	errs  []gqlError
	fatal bool // a query error (not a data error): no data at all
}

func (ex *gqlExec) selectSet(obj gqlObject, sel []*gqlField, path []any) map[string]any {
	out := map[string]any{}
	for _, f := range sel {
		key := f.name
		if f.alias != "" {
			key = f.alias
		}
		if f.name == "__typename" {
			out[key] = obj.typ
			continue
		}
		if f.name == "..." { // an inline fragment: "... on Type { ... }"
			if f.alias == obj.typ {
				for k, v := range ex.selectSet(obj, f.sel, path) {
					out[k] = v
				}
			}
			continue
		}
		args := map[string]any{}
		for k, v := range f.args {
			if ref, ok := v.(gqlVar); ok {
				args[k] = ex.vars[string(ref)]
			} else {
				args[k] = v
			}
		}
		v, ok, err := obj.field(f.name, args)
		p := append(append([]any(nil), path...), key)
		if !ok {
			ex.errs = append(ex.errs, gqlError{Message: fmt.Sprintf("Field '%s' doesn't exist on type '%s'", f.name, obj.typ),
				Extra: map[string]any{"code": "undefinedField", "typeName": obj.typ, "fieldName": f.name}})
			ex.fatal = true
			continue
		}
		if err != nil {
			typ := "NOT_FOUND"
			if te, ok := err.(gqlTypedError); ok {
				typ = te.typ
			}
			ex.errs = append(ex.errs, gqlError{Message: err.Error(), Type: typ, Path: p})
			out[key] = nil
			continue
		}
		out[key] = ex.value(v, f, p)
	}
	return out
}

func (ex *gqlExec) value(v any, f *gqlField, path []any) any {
	switch x := v.(type) {
	case gqlObject:
		if len(f.sel) == 0 {
			ex.errs = append(ex.errs, gqlError{Message: fmt.Sprintf("Field must have selections (field '%s' returns %s but has no selections.)", f.name, x.typ)})
			ex.fatal = true
			return nil
		}
		return ex.selectSet(x, f.sel, path)
	case *gqlObject:
		if x == nil {
			return nil
		}
		return ex.value(*x, f, path)
	case []gqlObject:
		list := make([]any, len(x))
		for i, o := range x {
			list[i] = ex.value(o, f, append(append([]any(nil), path...), i))
		}
		return list
	default:
		if len(f.sel) > 0 {
			ex.errs = append(ex.errs, gqlError{Message: fmt.Sprintf("Selections can't be made on scalars (field '%s')", f.name)})
			ex.fatal = true
			return nil
		}
		return v
	}
}

// ---- the schema ----

func (s *Server) gqlQuery(c *apiCall) gqlObject {
	return gqlObject{typ: "Query", field: func(name string, args map[string]any) (any, bool, error) {
		if name != "repository" {
			return s.gqlQueryProjects(c, name, args) // projects.go: organization, node
		}
		owner, _ := args["owner"].(string)
		repo, _ := args["name"].(string)
		rp := s.repos[strings.ToLower(owner+"/"+repo)]
		if rp == nil || !c.sees(rp) {
			return nil, true, fmt.Errorf("Could not resolve to a Repository with the name '%s/%s'.", owner, repo)
		}
		return s.gqlRepository(rp), true, nil
	}}
}

func (s *Server) gqlRepository(rp *repoState) gqlObject {
	return gqlObject{typ: "Repository", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "nameWithOwner":
			return rp.fullName(), true, nil
		case "pullRequest":
			n, _ := gqlInt(args["number"])
			is := rp.issues[n]
			if is == nil || is.pr == nil {
				return nil, true, fmt.Errorf("Could not resolve to a PullRequest with the number of %d.", n)
			}
			return s.gqlPullRequest(rp, is), true, nil
		case "issue":
			n, _ := gqlInt(args["number"])
			is := rp.issues[n]
			if is == nil || is.pr != nil {
				return nil, true, fmt.Errorf("Could not resolve to an Issue with the number of %d.", n)
			}
			return s.gqlIssueNode(rp, is), true, nil // projects.go
		}
		return nil, false, nil
	}}
}

func (s *Server) gqlPullRequest(rp *repoState, is *issueState) gqlObject {
	return gqlObject{typ: "PullRequest", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "number":
			return is.number, true, nil
		case "headRefOid":
			return is.pr.headSHA, true, nil
		case "commits":
			list := make([]gqlObject, 0, len(is.pr.commits))
			for _, cm := range is.pr.commits {
				cm := cm
				list = append(list, gqlObject{typ: "PullRequestCommit", field: func(name string, _ map[string]any) (any, bool, error) {
					if name == "commit" {
						return s.gqlCommit(cm), true, nil
					}
					return nil, name == "id", nil
				}})
			}
			return gqlConnection("PullRequestCommitConnection", list, args, 250)
		}
		return nil, false, nil
	}}
}

func (s *Server) gqlCommit(cm *commitState) gqlObject {
	return gqlObject{typ: "Commit", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "oid":
			return cm.sha, true, nil
		case "message":
			return cm.message, true, nil
		case "author":
			return s.gqlGitActor(gqlActor{cm.author, cm.authorEmail()}), true, nil
		case "committer":
			return s.gqlGitActor(gqlActor{cm.committerLogin(), cm.committerEmail()}), true, nil
		case "authors":
			var list []gqlObject
			for _, a := range commitAuthors(cm) {
				list = append(list, s.gqlGitActor(a))
			}
			return gqlConnection("GitActorConnection", list, args, len(list))
		}
		return nil, false, nil
	}}
}

func (s *Server) gqlGitActor(a gqlActor) gqlObject {
	return gqlObject{typ: "GitActor", field: func(name string, _ map[string]any) (any, bool, error) {
		switch name {
		case "name":
			return a.name, true, nil
		case "email":
			return a.email, true, nil
		case "user":
			login := s.userByEmail(a.email)
			if login == "" {
				return (*gqlObject)(nil), true, nil
			}
			u := gqlObject{typ: "User", field: func(name string, _ map[string]any) (any, bool, error) {
				switch name {
				case "login":
					return login, true, nil
				case "databaseId":
					return s.userID(login), true, nil
				}
				return nil, false, nil
			}}
			return &u, true, nil
		}
		return nil, false, nil
	}}
}

// gqlConnection pages list, of which GitHub serves at most max items (a pull
// request's first 250 commits), as a connection: first (required, 1..100)
// and after (a cursor from endCursor).
func gqlConnection(typ string, list []gqlObject, args map[string]any, max int) (any, bool, error) {
	first, ok := gqlInt(args["first"])
	if !ok || first < 1 || first > 100 {
		return nil, true, fmt.Errorf("You must provide a `first` value between 1 and 100 to properly paginate the `%s`.", typ)
	}
	if len(list) > max {
		list = list[:max]
	}
	start := 0
	if a, _ := args["after"].(string); a != "" {
		b, err := base64.StdEncoding.DecodeString(a)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(b), "cursor:"))
		if err != nil || err2 != nil || n < 0 {
			return nil, true, fmt.Errorf("`%s` does not appear to be a valid cursor.", a)
		}
		start = min(n, len(list))
	}
	end := min(start+first, len(list))
	page := list[start:end]
	endCursor := any(nil)
	if end > start {
		endCursor = base64.StdEncoding.EncodeToString([]byte("cursor:" + strconv.Itoa(end)))
	}
	return gqlObject{typ: typ, field: func(name string, _ map[string]any) (any, bool, error) {
		switch name {
		case "totalCount":
			return len(list), true, nil
		case "nodes":
			return page, true, nil
		case "pageInfo":
			return gqlObject{typ: "PageInfo", field: func(name string, _ map[string]any) (any, bool, error) {
				switch name {
				case "hasNextPage":
					return end < len(list), true, nil
				case "hasPreviousPage":
					return start > 0, true, nil
				case "endCursor":
					return endCursor, true, nil
				}
				return nil, false, nil
			}}, true, nil
		}
		return nil, false, nil
	}}, true, nil
}

func gqlInt(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), x == float64(int(x))
	case int:
		return x, true
	case json.Number:
		n, err := strconv.Atoi(string(x))
		return n, err == nil
	}
	return 0, false
}

// ---- the parser (operations, fields, aliases, arguments, variables) ----

type gqlField struct {
	alias, name string
	args        map[string]any // values: string, float64 (numbers), bool, nil, gqlVar, enum names as string
	sel         []*gqlField
}

type gqlVar string

type gqlVarDef struct {
	name, typ string
	required  bool
}

type gqlOp struct {
	vars     []gqlVarDef
	sel      []*gqlField
	mutation bool
}

type gqlParser struct {
	src string
	i   int
}

// parseGQL parses one operation: "{...}", "query {...}",
// "query Name($v: Type!, ...) {...}", or a mutation written so. Inline
// fragments ("... on Type {...}") are read; named fragments and directives
// are refused.
func parseGQL(src string) (*gqlOp, error) {
	p := &gqlParser{src: src}
	op := &gqlOp{}
	p.skip()
	if p.peekName() {
		kw := p.name()
		if kw != "query" && kw != "mutation" {
			return nil, fmt.Errorf("Parse error on %q: only queries and mutations are supported", kw)
		}
		op.mutation = kw == "mutation"
		p.skip()
		if p.peekName() {
			p.name()
		}
		p.skip()
		if p.eat('(') {
			for {
				p.skip()
				if p.eat(')') {
					break
				}
				if !p.eat('$') {
					return nil, p.errf("expected a variable definition")
				}
				v := gqlVarDef{name: p.name()}
				p.skip()
				if !p.eat(':') {
					return nil, p.errf("expected ':' after $%s", v.name)
				}
				p.skip()
				v.typ = p.typeRef()
				v.required = strings.HasSuffix(v.typ, "!")
				if v.name == "" || v.typ == "" {
					return nil, p.errf("bad variable definition")
				}
				op.vars = append(op.vars, v)
			}
		}
	}
	p.skip()
	sel, err := p.selectionSet()
	if err != nil {
		return nil, err
	}
	op.sel = sel
	p.skip()
	if p.i < len(p.src) {
		return nil, p.errf("unexpected text after the query")
	}
	return op, nil
}

func (p *gqlParser) errf(format string, args ...any) error {
	return fmt.Errorf("Parse error at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

// skip passes whitespace, commas and comments (all insignificant in GraphQL).
func (p *gqlParser) skip() {
	for p.i < len(p.src) {
		switch ch := p.src[p.i]; {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == ',':
			p.i++
		case ch == '#':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *gqlParser) eat(ch byte) bool {
	if p.i < len(p.src) && p.src[p.i] == ch {
		p.i++
		return true
	}
	return false
}

func (p *gqlParser) peekName() bool {
	return p.i < len(p.src) && (p.src[p.i] == '_' || unicode.IsLetter(rune(p.src[p.i])))
}

func (p *gqlParser) name() string {
	start := p.i
	for p.i < len(p.src) {
		ch := rune(p.src[p.i])
		if ch != '_' && !unicode.IsLetter(ch) && !unicode.IsDigit(ch) {
			break
		}
		p.i++
	}
	return p.src[start:p.i]
}

func (p *gqlParser) typeRef() string {
	var b strings.Builder
	if p.eat('[') {
		p.skip()
		b.WriteString("[" + p.typeRef())
		p.skip()
		if !p.eat(']') {
			return ""
		}
		b.WriteString("]")
	} else {
		b.WriteString(p.name())
	}
	if p.eat('!') {
		b.WriteString("!")
	}
	return b.String()
}

func (p *gqlParser) selectionSet() ([]*gqlField, error) {
	if !p.eat('{') {
		return nil, p.errf("expected '{'")
	}
	var out []*gqlField
	for {
		p.skip()
		if p.eat('}') {
			if len(out) == 0 {
				return nil, p.errf("empty selection")
			}
			return out, nil
		}
		if p.i >= len(p.src) {
			return nil, p.errf("unexpected end of query")
		}
		if strings.HasPrefix(p.src[p.i:], "...") {
			p.i += 3
			p.skip()
			if p.name() != "on" {
				return nil, p.errf("named fragments are not supported")
			}
			p.skip()
			f := &gqlField{name: "...", alias: p.name()}
			p.skip()
			sel, err := p.selectionSet()
			if err != nil {
				return nil, err
			}
			f.sel = sel
			out = append(out, f)
			continue
		}
		if p.src[p.i] == '@' {
			return nil, p.errf("directives are not supported")
		}
		if !p.peekName() {
			return nil, p.errf("expected a field name")
		}
		f := &gqlField{name: p.name()}
		p.skip()
		if p.eat(':') {
			p.skip()
			f.alias, f.name = f.name, p.name()
			if f.name == "" {
				return nil, p.errf("expected a field name after alias %s", f.alias)
			}
			p.skip()
		}
		if p.eat('(') {
			f.args = map[string]any{}
			for {
				p.skip()
				if p.eat(')') {
					break
				}
				k := p.name()
				p.skip()
				if k == "" || !p.eat(':') {
					return nil, p.errf("expected an argument")
				}
				p.skip()
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				f.args[k] = v
			}
			p.skip()
		}
		if p.i < len(p.src) && p.src[p.i] == '{' {
			sel, err := p.selectionSet()
			if err != nil {
				return nil, err
			}
			f.sel = sel
		}
		out = append(out, f)
	}
}

func (p *gqlParser) value() (any, error) {
	if p.i >= len(p.src) {
		return nil, p.errf("expected a value")
	}
	switch ch := p.src[p.i]; {
	case ch == '$':
		p.i++
		n := p.name()
		if n == "" {
			return nil, p.errf("expected a variable name")
		}
		return gqlVar(n), nil
	case ch == '"':
		start := p.i
		p.i++
		for p.i < len(p.src) && p.src[p.i] != '"' {
			if p.src[p.i] == '\\' {
				p.i++
			}
			p.i++
		}
		if !p.eat('"') {
			return nil, p.errf("unterminated string")
		}
		var s string
		if err := json.Unmarshal([]byte(p.src[start:p.i]), &s); err != nil {
			return nil, p.errf("bad string")
		}
		return s, nil
	case ch == '-' || (ch >= '0' && ch <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.src) && strings.IndexByte("0123456789.eE+-", p.src[p.i]) >= 0 {
			p.i++
		}
		f, err := strconv.ParseFloat(p.src[start:p.i], 64)
		if err != nil {
			return nil, p.errf("bad number")
		}
		return f, nil
	case p.peekName():
		switch n := p.name(); n {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		default:
			return n, nil // an enum value
		}
	}
	return nil, p.errf("lists and objects are not supported as arguments")
}
