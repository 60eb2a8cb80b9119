package rules

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// ConfigPath is where a repository's configuration lives on its default branch.
const ConfigPath = ".github/countersign.yml"

// Limits on what ParseConfig reads. The YAML parser's cost grows with the
// square of the number of tokens for some shapes (long block mappings, deep
// nesting), so the token count is bounded too: a real configuration has a few
// hundred tokens.
const (
	maxConfigBytes  = 1 << 20
	maxConfigTokens = 10000
)

// Separation says which roles must be distinct people (docs/design.md, Roles).
type Separation string

// The separation modes.
const (
	// SeparationAuto demands builder, approver and verifier all distinct in a
	// team of 3 or more, and relaxes only verifier != approver in a team of 2.
	SeparationAuto Separation = "auto"
	// SeparationTriple always demands all three roles distinct.
	SeparationTriple Separation = "triple"
	// SeparationMinimum demands only builder != verifier.
	SeparationMinimum Separation = "minimum"
)

// Config is a repository's configuration (docs/design.md, Configuration). Logins are stored as
// written (without a leading "@"); compare them with SameLogin.
//
// The yaml tags name the file's keys and the doc tags describe them: with
// the value lists below (separations, trackModes, CheckedActivities, e2e
// timings) and the login patterns, they are the one description of the file
// that both ParseConfig and ConfigSchema (the published JSON Schema) follow.
type Config struct {
	Leads      []string          `yaml:"leads" doc:"Leads: GitHub logins and @org/team slugs. Empty: people with admin or maintain permission."`
	Verifiers  []string          `yaml:"verifiers" doc:"Who may approve, verify and reject (logins and @org/teams). Empty: anyone with write permission."`
	Agents     map[string]string `yaml:"agents" doc:"Agent (bot) account -> the login of the person who pilots it; the pilot is a builder whenever the agent is."`
	Separation Separation        `yaml:"separation" doc:"Which roles must be different people: auto (all three in a team of 3 or more), triple (always all three), minimum (only builder and verifier)."`
	Tasks      TaskConfig        `yaml:"tasks" doc:"Which issues are tasks."`
	Escalation EscalationConfig  `yaml:"escalation" doc:"When a task is escalated to the leads."`
	Contracts  ContractConfig    `yaml:"contracts" doc:"Verification contracts: what must pass before /verify."`
	Goals      GoalConfig        `yaml:"goals" doc:"Goals (milestones)."`
	Gate       GateConfig        `yaml:"gate" doc:"What the countersign/verification check answers a pull request that closes no task."`
	Board      BoardConfig       `yaml:"board" doc:"An organization's GitHub Projects board countersign keeps (docs/board.md)."`
	// Pins are the accounts the logins named here (leads, verifiers, pilots,
	// critics' reviewers, gate.exempt) had when the configuration first named them: lower
	// case login -> user id. Filled by the adapters, never by the file: a
	// login given up and taken by someone else names no one (docs/design.md, Roles).
	Pins map[string]int64 `yaml:"-" json:"pins,omitempty"`
}

// DefaultMaxPerPR is how many tasks one pull request may close by default.
const DefaultMaxPerPR = 10

// TaskConfig says which issues are tasks.
type TaskConfig struct {
	Track        string   `yaml:"track" doc:"all open issues, milestoned ones, or labeled ones (with tasks.label)."`
	Label        string   `yaml:"label" doc:"The label that makes an issue a task when tasks.track is labeled."`
	IgnoreLabels []string `yaml:"ignore_labels" doc:"Issues with any of these labels are never tasks."`
	// MaxPerPR is how many tasks one pull request may close: one that names
	// more links none of them (and gets one reply).
	MaxPerPR int `yaml:"max_per_pr" doc:"How many tasks one pull request may close: one that names more links none of them."`
}

// trackModes are the values of tasks.track.
var trackModes = []string{"all", "milestoned", "labeled"}

// separations are the values of separation.
var separations = []Separation{SeparationAuto, SeparationTriple, SeparationMinimum}

// CheckedActivities are the activities CI checks can count for: the keys of
// contracts.checks. (Critics are met by reviews, not checks.)
var CheckedActivities = []string{ActUnitTest, ActTypecheck, ActLint, ActE2E}

// EscalationConfig says when a task is escalated to the leads.
type EscalationConfig struct {
	Rejections     int `yaml:"rejections" doc:"Rejections of a task that escalate it."`
	FailedAttempts int `yaml:"failed_attempts" doc:"Failed verification attempts of a task that escalate it."`
}

// ContractConfig tunes verification contracts. Its zero value has no words,
// no rules and not even the default rules: start from DefaultConfig().Contracts.
type ContractConfig struct {
	Checks map[string][]string `yaml:"checks" doc:"Activity (unit-test, typecheck, lint, e2e) -> the check run names and status contexts that count for it ('*' matches any text); an activity not listed is checked by the verifier. Unset: the repository's CI counts as it is, one ci criterion that every trusted check run and status on the head must pass (at least one)."`
	// Apps pins a check name to the GitHub App (its slug) that must create
	// its check runs; a run of that name by another App does not count.
	Apps map[string]string `yaml:"apps" doc:"Check name -> the slug of the GitHub App that must create it, e.g. {test: github-actions}."`
	// StatusCreators are the logins whose commit statuses count; empty: any
	// non-builder's.
	StatusCreators []string `yaml:"status_creators" doc:"Logins whose commit statuses count. Empty: anyone's who is not a builder of the task, but github-actions[bot]'s (a workflow's token, whoever's workflow ran), which counts only when listed."`
	Contradictions []string `yaml:"contradictions" doc:"Phrases that contradict a claim of completion (it is refused)."`
	Advisory       []string `yaml:"advisory" doc:"Words and phrases that make a task advisory."`
	Skip           []string `yaml:"skip" doc:"Words and phrases that make a task skip (checked before advisory)."`
	// Rules are the repository's file rules, applied with the default ones
	// (rules/contract_rules.yml): a rule whose files are a default rule's
	// (the same patterns, in any order) replaces it, the others add to them.
	Rules        []FileRule `yaml:"rules" doc:"File rules, applied with the default ones; a rule with a default rule's files replaces it."`
	DefaultRules bool       `yaml:"default_rules" doc:"false: only contracts.rules apply, not the default file rules."`
	// Critics maps a critic's name to its reviewers (logins and "@org/team"):
	// an approval by one of them meets its criterion; by anyone's counted
	// approval when it has none.
	Critics map[string][]string `yaml:"critics" doc:"Critic name -> its reviewers (logins and @org/teams). A critic with none is met by any counted approval."`
}

// FileRule says which activities a change to some files calls for.
type FileRule struct {
	Files    []string `yaml:"files" doc:"Glob patterns relative to the repository's root, e.g. **/*.go, web/**/*.{ts,tsx}."`
	UnitTest bool     `yaml:"unit-test" doc:"Unit tests must pass."`
	E2E      string   `yaml:"e2e" doc:"End-to-end tests: immediate (block /verify) or deferred (to the goal's integration check)."`
	Critics  []string `yaml:"critics" doc:"Critics that must approve, e.g. frontend-critic."`
}

// e2eTimings are the values of a file rule's e2e ("" for none).
var e2eTimings = []string{"", TimingImmediate, TimingDeferred}

// GoalConfig tunes goals.
type GoalConfig struct {
	IntegrationCheck string `yaml:"integration_check" doc:"A check that must be green on the default branch to confirm a goal; empty for none."`
}

// DefaultConfig returns the configuration of a repository without a config file.
func DefaultConfig() Config {
	return Config{
		Separation: SeparationAuto,
		Tasks:      TaskConfig{Track: "all", Label: "task", IgnoreLabels: []string{"question"}, MaxPerPR: DefaultMaxPerPR},
		Escalation: EscalationConfig{Rejections: 2, FailedAttempts: 3},
		Gate:       GateConfig{Untracked: UntrackedRequire},
		Board:      BoardConfig{Field: DefaultBoardField},
		Contracts: ContractConfig{
			// Checks unset: the repository's CI counts as it is (WholeCI).
			Contradictions: []string{
				"requires manual", "cannot be automated", "could not complete", "needs human", "manual intervention",
			},
			Advisory: []string{
				"investigate", "research", "explore", "discuss", "plan", "design", "audit", "review", "analyze",
			},
			Skip:         []string{"document", "documentation", "readme", "docs", "comment", "typo", "spelling"},
			DefaultRules: true,
		},
	}
}

// ConfigError is a problem with a configuration file. Line and Column are
// 1-based; 0 when unknown.
type ConfigError struct {
	Line, Column int
	Msg          string
	// Path is the key the mistake is at, e.g. contracts.rules[2].files
	// (list entries counted from 1); "" for the file as a whole.
	Path string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Line <= 0:
		return fmt.Sprintf("%s: %s", ConfigPath, e.Msg)
	case e.Column <= 0:
		return fmt.Sprintf("%s:%d: %s", ConfigPath, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", ConfigPath, e.Line, e.Column, e.Msg)
}

// bom is the UTF-8 byte order mark.
var bom = []byte("\ufeff")

// UnknownPilots checks the pilots that agents: names in configuration file
// data (which ParseConfig read as cfg) against the accounts GitHub knows: a
// configured pilot stands in for an agent's default pilots, so a pilot that
// is no account (a typo) would leave the agent's work without one, and
// whoever drives it free to approve and verify it. Each is a mistake at its
// line (ConfigErrors); nil when every pilot is known.
func UnknownPilots(data []byte, cfg Config, known func(login string) bool) error {
	var (
		errs problems
		at   *locator
	)
	for _, a := range slices.Sorted(maps.Keys(cfg.Agents)) {
		p := cfg.Agents[a]
		if known(p) {
			continue
		}
		if at == nil {
			body, _, _ := readYAML(bytes.TrimPrefix(data, bom))
			at = &locator{body}
		}
		errs.add(at.errorf(fmt.Sprintf("agents: the pilot of %s, %s, is no GitHub account: the agent would have no pilot, and whoever drives it could approve and verify its work", quote(a), quote(p)), "agents", a))
	}
	return errs.err()
}

// TooLargeConfig is the mistake of a configuration file larger than
// ParseConfig reads (1 MB, as much as GitHub's contents API serves).
func TooLargeConfig() *ConfigError {
	return &ConfigError{Msg: fmt.Sprintf("file is larger than %d bytes", maxConfigBytes)}
}

// SameLogin reports whether two GitHub logins name the same account.
func SameLogin(a, b string) bool { return strings.EqualFold(a, b) }

// IsTeam reports whether a leads or verifiers entry is a team, "@org/slug".
func (c Config) IsTeam(entry string) (org, slug string, ok bool) {
	m := teamRE.FindStringSubmatch(entry)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Pinned reports whether u may be the account that login (as the
// configuration names it) was pinned to: no pin, or u's id unknown, or the
// same id.
func (c Config) Pinned(login string, u User) bool {
	pin := c.Pins[strings.ToLower(strings.TrimPrefix(login, "@"))]
	return pin == 0 || u.ID == 0 || pin == u.ID
}

// NamedLogins are the logins (not teams) the configuration names: leads,
// verifiers, agents' pilots, critics' reviewers and gate.exempt.
func (c Config) NamedLogins() []string {
	var out []string
	add := func(l string) {
		if _, _, team := c.IsTeam(l); team || l == "" {
			return
		}
		l = strings.ToLower(strings.TrimPrefix(l, "@"))
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for _, l := range c.Leads {
		add(l)
	}
	for _, l := range c.Verifiers {
		add(l)
	}
	for _, p := range c.Agents {
		add(p)
	}
	for _, rs := range c.Contracts.Critics {
		for _, l := range rs {
			add(l)
		}
	}
	for _, l := range c.Gate.Exempt {
		add(l)
	}
	slices.Sort(out)
	return out
}

// Pilot returns the login of the person who drives agent account, if it is a
// configured agent.
func (c Config) Pilot(account string) (string, bool) {
	for a, p := range c.Agents {
		if SameLogin(a, account) {
			return p, true
		}
	}
	return "", false
}

// The patterns of logins, bot accounts, teams, App slugs and critics' names
// (in JSON Schema's dialect too).
const (
	loginPattern  = `[A-Za-z0-9][A-Za-z0-9-]{0,38}`
	teamPattern   = `@(` + loginPattern + `)/([A-Za-z0-9][A-Za-z0-9_-]{0,99})`
	slugPattern   = `[a-z0-9][a-z0-9-]{0,99}`
	criticPattern = `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`
)

var (
	loginRE = regexp.MustCompile(`^` + loginPattern + `$`)
	botRE   = regexp.MustCompile(`^` + loginPattern + `\[bot\]$`)
	teamRE  = regexp.MustCompile(`^` + teamPattern + `$`)
	slugRE  = regexp.MustCompile(`^` + slugPattern + `$`)
)

// ParseConfig reads a configuration file: the defaults, overlaid by the keys
// the file sets (a key replaces its default as a whole; a nested key only
// itself). An empty or comments-only file is the defaults. Errors are
// *ConfigError.
func ParseConfig(data []byte) (Config, error) {
	if len(data) > maxConfigBytes {
		return Config{}, TooLargeConfig()
	}
	// A byte order mark may start a YAML stream (editors on Windows write
	// one); it is no part of the first key.
	data = bytes.TrimPrefix(data, bom)
	body, raw, err := readYAML(data)
	if body == nil || err != nil && len(Problems(err)) == 0 {
		if err != nil {
			return Config{}, err // the file cannot be read as settings at all
		}
		return DefaultConfig(), nil
	}
	// Every mistake is reported at once: the shape's, then the values' of
	// what could be read.
	shape := Problems(err)
	var values problems
	c := DefaultConfig()
	at := locator{body}
	values.add(raw.apply(&c, at))
	values.add(c.normalize(at))
	errs := problems(shape)
	for _, v := range values {
		if !slices.ContainsFunc(shape, func(s *ConfigError) bool { return follows(v, s) }) {
			errs = append(errs, v)
		}
	}
	if err := errs.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// follows reports whether value mistake v may only follow from shape
// mistake s: it is in the same entry (the mapping or list item s is in).
func follows(v, s *ConfigError) bool {
	section := s.Path
	if i := strings.LastIndexAny(section, ".["); i > 0 {
		section = section[:i]
	}
	return section != "" && (v.Path == section || strings.HasPrefix(v.Path, section+".") || strings.HasPrefix(v.Path, section+"["))
}

// readYAML parses data's one document and decodes it; body is nil when the
// file has no content. go-yaml panics on some odd input (tags, so those are
// refused first): a panic in it is reported as an error.
func readYAML(data []byte) (body ast.Node, raw rawConfig, err error) {
	defer func() {
		if r := recover(); r != nil {
			body, err = nil, &ConfigError{Msg: "the YAML parser failed on this file; simplify it"}
		}
	}()
	tokens := lexer.Tokenize(string(data))
	if len(tokens) > maxConfigTokens {
		return nil, raw, &ConfigError{Msg: fmt.Sprintf("file is too complex (more than %d YAML tokens)", maxConfigTokens)}
	}
	for _, tk := range tokens {
		if tk.Type == token.TagType {
			return nil, raw, errorAt(tk, "YAML tags ("+quote(tk.Value)+") are not supported")
		}
	}
	file, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, raw, yamlError(err)
	}
	for _, doc := range file.Docs {
		if doc.Body == nil || doc.Body.Type() == ast.DirectiveType {
			continue // empty, comments only, or a %YAML directive
		}
		if body != nil {
			tk := doc.Start
			if tk == nil {
				tk = doc.Body.GetToken()
			}
			return nil, raw, errorAt(tk, "only one YAML document is allowed")
		}
		body = doc.Body
	}
	if body == nil {
		return nil, raw, nil
	}
	if t := unwrap(body).Type(); t != ast.MappingType {
		return nil, raw, errorAt(body.GetToken(), "the file must be a mapping of settings (leads:, tasks:, ...), not "+nodeWord(t))
	}
	// Every key and the shape of every value are checked against Config
	// first, each mistake with its key's path; the decoder (which stops at the
	// first mistake of a section) then reads what it can.
	k := shapeChecker{anchors: map[string]ast.Node{}}
	ast.Walk(&k, body)
	k.check(body, reflect.TypeOf(Config{}), "", 0)
	if err := yaml.NodeToValue(body, &raw); err != nil {
		ye := yamlError(err)
		if !slices.ContainsFunc(k.probs, func(p *ConfigError) bool { return p.Line == ye.Line }) {
			k.probs.add(ye)
		}
	}
	return body, raw, k.probs.err()
}

// shapeChecker checks that every mapping read into a struct has only the
// struct's keys, and that every value has the shape its key asks for (a
// mapping, a list, a text, a boolean), collecting every mistake.
type shapeChecker struct {
	anchors map[string]ast.Node // anchor name -> its value
	probs   problems
}

// Visit collects the anchors (ast.Visitor).
func (k *shapeChecker) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
		k.anchors[a.Name.GetToken().Value] = a.Value
	}
	return k
}

// check checks node n, at path (dotted keys, 1-based list indexes), read
// into a value of type t.
func (k *shapeChecker) check(n ast.Node, t reflect.Type, path string, depth int) {
	if n == nil || depth > 64 {
		return
	}
	n = unwrap(n)
	if a, ok := n.(*ast.AliasNode); ok {
		if a.Value != nil {
			k.check(k.anchors[a.Value.GetToken().Value], t, path, depth+1)
		}
		return
	}
	if n.Type() == ast.NullType {
		return // null keeps the default
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			k.wrong(n, t, path)
			return
		}
		for _, mv := range m.Values {
			if _, merge := unwrap(mv.Key).(*ast.MergeKeyNode); merge {
				k.checkMerge(mv.Value, t, path, depth+1)
				continue
			}
			key := keyText(mv.Key)
			f, ok := fieldByKey(t, key)
			if _, isString := unwrap(mv.Key).(*ast.StringNode); !ok || !isString {
				k.unknown(mv.Key, t, path, key)
				continue
			}
			k.check(mv.Value, f.Type, join(path, key), depth+1)
		}
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			k.wrong(n, t, path)
			return
		}
		for i, v := range seq.Values {
			k.check(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i+1), depth+1)
		}
	case reflect.Map:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			k.wrong(n, t, path)
			return
		}
		for _, mv := range m.Values {
			k.check(mv.Value, t.Elem(), join(path, keyText(mv.Key)), depth+1)
		}
	case reflect.String:
		switch n.(type) {
		case *ast.MappingNode, *ast.SequenceNode:
			k.wrong(n, t, path)
		}
	case reflect.Bool:
		if _, ok := n.(*ast.BoolNode); !ok {
			k.wrong(n, t, path)
		}
	}
	// Numbers: setNumber says what is wrong with them, with their key.
}

// unknown reports key, in the mapping at path read into struct type t, as
// unknown, with the nearest key t has.
func (k *shapeChecker) unknown(key ast.Node, t reflect.Type, path, name string) {
	msg := "unknown key " + quote(name)
	if path != "" {
		msg = join(path, name) + ": " + msg
	}
	keys := structKeys(t)
	if hint := didYouMean(name, keys); hint != "" {
		msg += hint
	} else {
		where := "the file"
		if path != "" {
			where = path
		}
		msg += " (" + where + " has " + strings.Join(keys, ", ") + ")"
	}
	e := errorAt(key.GetToken(), msg)
	e.Path = join(path, name)
	k.probs.add(e)
}

// wrong reports n, at path, as not the shape type t asks for.
func (k *shapeChecker) wrong(n ast.Node, t reflect.Type, path string) {
	msg := fmt.Sprintf("expected %s, not %s", typeWord(t), nodeWord(n.Type()))
	if path != "" {
		msg = path + ": " + msg
	}
	e := errorAt(n.GetToken(), msg)
	e.Path = path
	k.probs.add(e)
}

// checkMerge checks the value of a merge key ("<<: *x" or "<<: [*x, *y]").
func (k *shapeChecker) checkMerge(n ast.Node, t reflect.Type, path string, depth int) {
	if seq, ok := unwrap(n).(*ast.SequenceNode); ok {
		for _, v := range seq.Values {
			k.check(v, t, path, depth+1)
		}
		return
	}
	k.check(n, t, path, depth)
}

// structKeys are the keys of struct type t, in order.
func structKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if key := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; key != "" && key != "-" {
			out = append(out, key)
		}
	}
	return out
}

// fieldByKey returns the field of struct type t read from key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if name := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]; name == key && name != "-" {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// rawConfig is the file as written: nil means "not given, keep the default".
type rawConfig struct {
	Leads      *[]string          `yaml:"leads"`
	Verifiers  *[]string          `yaml:"verifiers"`
	Agents     *map[string]string `yaml:"agents"`
	Separation *string            `yaml:"separation"`
	Tasks      *struct {
		Track        *string   `yaml:"track"`
		Label        *string   `yaml:"label"`
		IgnoreLabels *[]string `yaml:"ignore_labels"`
		MaxPerPR     any       `yaml:"max_per_pr"`
	} `yaml:"tasks"`
	Escalation *struct {
		// any, not int: the decoder would silently truncate 1.5 into an int.
		Rejections     any `yaml:"rejections"`
		FailedAttempts any `yaml:"failed_attempts"`
	} `yaml:"escalation"`
	Contracts *struct {
		Checks         *map[string][]string `yaml:"checks"`
		Apps           *map[string]string   `yaml:"apps"`
		StatusCreators *[]string            `yaml:"status_creators"`
		Contradictions *[]string            `yaml:"contradictions"`
		Advisory       *[]string            `yaml:"advisory"`
		Skip           *[]string            `yaml:"skip"`
		Rules          *[]FileRule          `yaml:"rules"`
		DefaultRules   *bool                `yaml:"default_rules"`
		Critics        *map[string][]string `yaml:"critics"`
	} `yaml:"contracts"`
	Goals *struct {
		IntegrationCheck *string `yaml:"integration_check"`
	} `yaml:"goals"`
	Gate  *rawGate  `yaml:"gate"`
	Board *rawBoard `yaml:"board"`
}

// apply overlays the keys r sets on c.
func (r *rawConfig) apply(c *Config, at locator) error {
	var errs problems
	set(&c.Leads, r.Leads)
	set(&c.Verifiers, r.Verifiers)
	set(&c.Agents, r.Agents)
	if r.Separation != nil {
		c.Separation = Separation(*r.Separation)
	}
	if t := r.Tasks; t != nil {
		set(&c.Tasks.Track, t.Track)
		set(&c.Tasks.Label, t.Label)
		set(&c.Tasks.IgnoreLabels, t.IgnoreLabels)
		errs.add(setNumber(&c.Tasks.MaxPerPR, t.MaxPerPR, at, "tasks", "max_per_pr"))
	}
	if e := r.Escalation; e != nil {
		errs.add(setNumber(&c.Escalation.Rejections, e.Rejections, at, "escalation", "rejections"))
		errs.add(setNumber(&c.Escalation.FailedAttempts, e.FailedAttempts, at, "escalation", "failed_attempts"))
	}
	if k := r.Contracts; k != nil {
		set(&c.Contracts.Checks, k.Checks)
		set(&c.Contracts.Apps, k.Apps)
		set(&c.Contracts.StatusCreators, k.StatusCreators)
		set(&c.Contracts.Contradictions, k.Contradictions)
		set(&c.Contracts.Advisory, k.Advisory)
		set(&c.Contracts.Skip, k.Skip)
		set(&c.Contracts.Rules, k.Rules)
		set(&c.Contracts.DefaultRules, k.DefaultRules)
		set(&c.Contracts.Critics, k.Critics)
	}
	if g := r.Goals; g != nil {
		set(&c.Goals.IntegrationCheck, g.IntegrationCheck)
	}
	r.Gate.apply(&c.Gate)
	r.Board.apply(&c.Board)
	return errs.err()
}

// setNumber sets *dst to v, a whole number, when the file gives one.
func setNumber(dst *int, v any, at locator, section, key string) error {
	if v == nil {
		return nil
	}
	n, ok := wholeNumber(v)
	if !ok {
		return at.errorf(fmt.Sprintf("%s.%s must be a whole number, not %s", section, key, valueWord(v)), section, key)
	}
	*dst = n
	return nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func wholeNumber(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		if n >= math.MinInt && n <= math.MaxInt {
			return int(n), true
		}
	case uint64:
		if n <= math.MaxInt {
			return int(n), true
		}
	}
	return 0, false
}

// normalize checks c and puts it in canonical form: a leading "@" stripped
// from logins, duplicates removed (the first kept), empty lists and maps nil.
// It is idempotent. at locates the offending value for errors.
func (c *Config) normalize(at locator) error {
	var (
		errs problems
		err  error
	)
	c.Leads, err = people(c.Leads, "leads", at)
	errs.add(err)
	c.Verifiers, err = people(c.Verifiers, "verifiers", at)
	errs.add(err)
	c.Agents, err = agents(c.Agents, at)
	errs.add(err)
	if !slices.Contains(separations, c.Separation) {
		msg := "separation must be auto, triple or minimum, not " + quote(string(c.Separation))
		errs.add(at.errorf(msg+didYouMean(string(c.Separation), toStrings(separations)), "separation"))
	}
	if !slices.Contains(trackModes, c.Tasks.Track) {
		msg := "tasks.track must be all, milestoned or labeled, not " + quote(c.Tasks.Track)
		errs.add(at.errorf(msg+didYouMean(c.Tasks.Track, trackModes), "tasks", "track"))
	}
	if c.Tasks.Track == "labeled" && strings.TrimSpace(c.Tasks.Label) == "" {
		errs.add(at.errorf("tasks.label must name a label when tasks.track is labeled", "tasks", "label"))
	}
	c.Tasks.IgnoreLabels, err = words(c.Tasks.IgnoreLabels, strings.EqualFold, at, "tasks", "ignore_labels")
	errs.add(err)
	for _, f := range []struct {
		path []any
		n    int
	}{{[]any{"tasks", "max_per_pr"}, c.Tasks.MaxPerPR}, {[]any{"escalation", "rejections"}, c.Escalation.Rejections},
		{[]any{"escalation", "failed_attempts"}, c.Escalation.FailedAttempts}} {
		r := countRanges[dotted(f.path)]
		switch {
		case f.n < r.min:
			errs.add(at.errorf(fmt.Sprintf("%s must be at least %d, not %d", dotted(f.path), r.min, f.n), f.path...))
		case f.n > r.max:
			errs.add(at.errorf(fmt.Sprintf("%s must be at most %d, not %d", dotted(f.path), r.max, f.n), f.path...))
		}
	}
	errs.add(c.Gate.normalize(at))
	errs.add(c.Board.normalize(at))
	errs.add(c.Contracts.normalize(at))
	return errs.err()
}

// countRange is the range a count of the file must be in.
type countRange struct{ min, max int }

// countRanges bound the file's counts, and the schema shows them. Escalation
// after more than 100 rejections or failed attempts would be none at all
// (a task's record keeps its last 20 failures); a pull request that closes
// more than 100 tasks is not one change, and each task it closes costs
// writes on every event of it.
var countRanges = map[string]countRange{
	"tasks.max_per_pr":           {1, 100},
	"escalation.rejections":      {1, 100},
	"escalation.failed_attempts": {1, 100},
}

// normalize checks the contracts: settings (see Config.normalize).
func (k *ContractConfig) normalize(at locator) error {
	var (
		errs problems
		err  error
	)
	k.Checks, err = checks(k.Checks, at)
	errs.add(err)
	k.Apps, err = apps(k.Apps, at)
	errs.add(err)
	k.StatusCreators, err = logins(k.StatusCreators, at, "contracts", "status_creators")
	errs.add(err)
	k.Contradictions, err = words(k.Contradictions, strings.EqualFold, at, "contracts", "contradictions")
	errs.add(err)
	k.Advisory, err = words(k.Advisory, sameWords, at, "contracts", "advisory")
	errs.add(err)
	k.Skip, err = words(k.Skip, sameWords, at, "contracts", "skip")
	errs.add(err)
	named := k.Rules
	k.Rules, err = fileRules(k.Rules, at, "contracts", "rules")
	errs.add(err)
	k.Critics, err = critics(k.Critics, at)
	errs.add(err)
	errs.add(undefinedCritics(named, k.Critics, at))
	return errs.err()
}

// undefinedCritics checks the critics the file's rules name against those
// contracts.critics defines and those the default rules name. A name that is
// a near miss of one of them is a typo; a name that is none of them while
// contracts.critics defines some was meant to be defined there. Either way
// the rule would silently be met by any counted approval. A name defined
// nowhere while contracts.critics is empty is allowed: such a critic is
// documented to be met by any counted approval.
func undefinedCritics(rules []FileRule, defined map[string][]string, at locator) error {
	var errs problems
	known := slices.Sorted(maps.Keys(defined))
	all := slices.Clone(known)
	for _, r := range defaultRules() {
		for _, c := range r.Critics {
			if !slices.Contains(all, c) {
				all = append(all, c)
			}
		}
	}
	for i, r := range rules {
		for j, c := range r.Critics {
			if !criticRE.MatchString(c) || slices.Contains(all, c) {
				continue
			}
			where := fmt.Sprintf("contracts.rules: rule %d: critics: %s is not defined in contracts.critics", i+1, quote(c))
			// Critics' names share their "-critic": only an edit or two
			// within the rest of a longer name is a near miss (ux-critic is
			// not ci-critic).
			hint := ""
			if near := nearest(c, all); near != "" && editDistance(strings.ToLower(c), near) <= max(1, len(c)/6) {
				hint = didYouMean(c, all)
			}
			switch {
			case hint != "":
				errs.add(at.errorf(where+hint, "contracts", "rules", i, "critics", j))
			case len(known) > 0:
				errs.add(at.errorf(fmt.Sprintf("%s (%s); define it there (with no reviewers, any counted approval meets it)", where, strings.Join(known, ", ")),
					"contracts", "rules", i, "critics", j))
			}
		}
	}
	return errs.err()
}

// problems collects the mistakes of a file, to report them all at once.
type problems []*ConfigError

// add records err (a *ConfigError or ConfigErrors; nil is nothing).
func (p *problems) add(err error) {
	var many ConfigErrors
	var one *ConfigError
	switch {
	case err == nil:
	case errors.As(err, &many):
		*p = append(*p, many...)
	case errors.As(err, &one):
		*p = append(*p, one)
	default:
		*p = append(*p, &ConfigError{Msg: oneLine(err.Error())})
	}
}

// err is nil without problems, else the ConfigErrors, in the file's order.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	out := ConfigErrors(slices.Clone(p))
	slices.SortStableFunc(out, func(a, b *ConfigError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return slices.CompactFunc(out, func(a, b *ConfigError) bool { return *a == *b })
}

// ConfigErrors are every mistake of a configuration file, in the file's
// order. errors.As finds the first as a *ConfigError.
type ConfigErrors []*ConfigError

func (e ConfigErrors) Error() string {
	lines := make([]string, len(e))
	for i, c := range e {
		lines[i] = c.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As and errors.Is see each mistake.
func (e ConfigErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, c := range e {
		out[i] = c
	}
	return out
}

// Problems are the mistakes err (from ParseConfig) reports, in the file's
// order.
func Problems(err error) []*ConfigError {
	var p problems
	p.add(err)
	if e, ok := p.err().(ConfigErrors); ok {
		return e
	}
	return nil
}

// didYouMean is "; did you mean X?" for the nearest of words to w, or "".
func didYouMean(w string, words []string) string {
	if near := nearest(w, words); near != "" && near != w {
		return "; did you mean " + quote(near) + "?"
	}
	return ""
}

func toStrings[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}

// sameWords reports whether two advisory or skip entries say the same words,
// in any case and with any spacing.
func sameWords(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

// criticRE is what a critic's name may be.
var criticRE = regexp.MustCompile(`^` + criticPattern + `$`)

// apps checks contracts.apps: check name -> the slug of the GitHub App that
// must create it.
func apps(m map[string]string, at locator) (map[string]string, error) {
	var errs problems
	var out map[string]string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.TrimSpace(k) == "" {
			errs.add(at.errorf("contracts.apps: a check name is empty", "contracts", "apps", mapKey(k)))
			continue
		}
		if !slugRE.MatchString(m[k]) {
			errs.add(at.errorf(fmt.Sprintf("contracts.apps.%s: %s is not a GitHub App's slug (lower-case letters, digits and '-', as in its URL)", k, quote(m[k])), "contracts", "apps", k))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = m[k]
	}
	return out, errs.err()
}

// logins checks and dedups a list of accounts (people or bots, not teams),
// a leading "@" stripped.
func logins(list []string, at locator, path ...any) ([]string, error) {
	var errs problems
	var out []string
	for i, e := range list {
		e = strings.TrimPrefix(e, "@")
		if !loginRE.MatchString(e) && !botRE.MatchString(e) {
			errs.add(at.errorf(fmt.Sprintf("%s: %s is not a GitHub login", dotted(path), quote(list[i])), append(slices.Clip(path), i)...))
			continue
		}
		if !slices.ContainsFunc(out, func(o string) bool { return SameLogin(o, e) }) {
			out = append(out, e)
		}
	}
	return out, errs.err()
}

// critics checks contracts.critics: critic name -> its reviewers (logins and
// teams, as in leads:), a leading "@" stripped from logins, duplicates removed.
func critics(m map[string][]string, at locator) (map[string][]string, error) {
	var errs problems
	var out map[string][]string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !criticRE.MatchString(name) {
			errs.add(at.errorf(fmt.Sprintf("contracts.critics: %s is not a critic's name (letters, digits, '.', '_' and '-')", quote(name)), "contracts", "critics", mapKey(name)))
			continue
		}
		var reviewers []string
		for i, e := range m[name] {
			if !teamRE.MatchString(e) {
				e = strings.TrimPrefix(e, "@")
				if !loginRE.MatchString(e) && !botRE.MatchString(e) {
					errs.add(at.errorf(fmt.Sprintf("contracts.critics.%s: %s is not a GitHub login or an @org/team", name, quote(m[name][i])), "contracts", "critics", name, i))
					continue
				}
			}
			if !slices.ContainsFunc(reviewers, func(o string) bool { return SameLogin(o, e) }) {
				reviewers = append(reviewers, e)
			}
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[name] = reviewers
	}
	return out, errs.err()
}

// fileRules checks a list of file rules, at path in the file: each names
// valid, relative glob patterns and asks for something. Duplicate patterns
// and critics are removed; an empty critics list is nil.
func fileRules(rules []FileRule, at locator, path ...any) ([]FileRule, error) {
	var errs problems
	var out []FileRule
	for i, r := range rules {
		where := fmt.Sprintf("%s: rule %d", dotted(path), i+1)
		rp := append(slices.Clip(path), i)
		if len(r.Files) == 0 {
			errs.add(at.errorf(where+": files must list at least one pattern", append(slices.Clip(rp), "files")...))
			continue
		}
		var files []string
		for j, f := range r.Files {
			if msg := badPattern(f); msg != "" {
				errs.add(at.errorf(fmt.Sprintf("%s: files: %s %s", where, quote(f), msg), append(slices.Clip(rp), "files", j)...))
				continue
			}
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		if !slices.Contains(e2eTimings, r.E2E) {
			errs.add(at.errorf(fmt.Sprintf("%s: e2e must be immediate or deferred, not %s", where, quote(r.E2E)), append(slices.Clip(rp), "e2e")...))
		}
		var names []string
		for j, c := range r.Critics {
			if !criticRE.MatchString(c) {
				errs.add(at.errorf(fmt.Sprintf("%s: critics: %s is not a critic's name (letters, digits, '.', '_' and '-')", where, quote(c)), append(slices.Clip(rp), "critics", j)...))
				continue
			}
			if !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
		if !r.UnitTest && r.E2E == "" && len(r.Critics) == 0 {
			errs.add(at.errorf(where+": it asks for nothing: set unit-test, e2e or critics", append(slices.Clip(rp), mapKey("files"))...))
			continue
		}
		out = append(out, FileRule{Files: files, UnitTest: r.UnitTest, E2E: r.E2E, Critics: names})
	}
	return out, errs.err()
}

// badPattern says what is wrong with a file rule's glob pattern, or "".
func badPattern(p string) string {
	switch {
	case strings.TrimSpace(p) == "":
		return "is empty"
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./"):
		return "must be relative to the repository's root (without a leading / or ./)"
	case !doublestar.ValidatePattern(p):
		return "is not a valid glob pattern"
	}
	return ""
}

// people checks and dedups a leads or verifiers list.
func people(list []string, key string, at locator) ([]string, error) {
	var errs problems
	var out []string
	for i, e := range list {
		if !teamRE.MatchString(e) {
			e = strings.TrimPrefix(e, "@")
			if !loginRE.MatchString(e) && !botRE.MatchString(e) {
				errs.add(at.errorf(fmt.Sprintf("%s: %s is not a GitHub login or an @org/team", key, quote(list[i])), key, i))
				continue
			}
		}
		if !slices.ContainsFunc(out, func(o string) bool { return SameLogin(o, e) }) {
			out = append(out, e)
		}
	}
	return out, errs.err()
}

// agents checks the agents map: account (login, optionally with [bot]) ->
// pilot (a person's login). Accounts that differ only in case must agree on
// the pilot; the one that sorts first is kept.
func agents(m map[string]string, at locator) (map[string]string, error) {
	var errs problems
	keys := slices.Sorted(maps.Keys(m))
	var out map[string]string
	for _, k := range keys {
		a, p := strings.TrimPrefix(k, "@"), strings.TrimPrefix(m[k], "@")
		if !loginRE.MatchString(a) && !botRE.MatchString(a) {
			errs.add(at.errorf(fmt.Sprintf("agents: %s is not a GitHub login", quote(k)), "agents", mapKey(k)))
			continue
		}
		if !loginRE.MatchString(p) {
			errs.add(at.errorf(fmt.Sprintf("agents: the pilot of %s must be a person's GitHub login, not %s", quote(k), quote(m[k])), "agents", k))
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		if prev, ok := (Config{Agents: out}).Pilot(a); ok {
			if !SameLogin(prev, p) {
				errs.add(at.errorf(fmt.Sprintf("agents: %s is listed twice with different pilots", quote(a)), "agents", mapKey(k)))
			}
			continue
		}
		out[a] = p
	}
	return out, errs.err()
}

// checks checks contracts.checks: activity -> check names.
func checks(m map[string][]string, at locator) (map[string][]string, error) {
	var errs problems
	if m == nil {
		return nil, nil // unset: the whole CI counts (WholeCI)
	}
	out := map[string][]string{} // given, even empty: it maps activities as it says
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(CheckedActivities, k) {
			msg := fmt.Sprintf("contracts.checks: %s is not an activity CI checks (%s)", quote(k), strings.Join(CheckedActivities, ", "))
			if near := nearest(k, CheckedActivities); near != "" {
				msg += "; did you mean " + quote(near) + "?"
			}
			errs.add(at.errorf(msg, "contracts", "checks", mapKey(k)))
			continue
		}
		if m[k] == nil { // "typecheck:" with nothing after it: a half-edited line must not switch a gate off
			errs.add(at.errorf(fmt.Sprintf("contracts.checks.%s is empty: list the check names that count for it, or write [] to leave it to the verifier on purpose", k), "contracts", "checks", mapKey(k)))
			continue
		}
		names, err := words(m[k], func(a, b string) bool { return a == b }, at, "contracts", "checks", k)
		errs.add(err)
		out[k] = names
	}
	return out, errs.err()
}

// words checks that no entry of a list is blank, and dedups it.
func words(list []string, same func(a, b string) bool, at locator, path ...any) ([]string, error) {
	var (
		out  []string
		errs problems
	)
	for i, w := range list {
		if strings.TrimSpace(w) == "" {
			errs.add(at.errorf(fmt.Sprintf("%s: entries must not be empty", dotted(path)), append(slices.Clip(path), i)...))
			continue
		}
		if !slices.ContainsFunc(out, func(o string) bool { return same(o, w) }) {
			out = append(out, w)
		}
	}
	return out, errs.err()
}

func dotted(path []any) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		fmt.Fprint(&b, p)
	}
	return b.String()
}

// locator finds where a value is in the file, to report errors at its line.
// A zero locator knows no positions.
type locator struct{ root ast.Node }

// mapKey, in a locator path, stands for a mapping's key rather than its value.
type mapKey string

// errorf returns a ConfigError at the node that path leads to: string steps
// are mapping keys (to the value), int steps sequence indexes, a final mapKey
// the key itself. Where the path cannot be followed (an alias, a merge key),
// the error is at the last node reached, or at line 0.
func (l locator) errorf(msg string, path ...any) *ConfigError {
	n, best := unwrap(l.root), ast.Node(nil)
	for _, step := range path {
		var next ast.Node
		switch s := step.(type) {
		case string, mapKey:
			if m, ok := n.(*ast.MappingNode); ok {
				for _, mv := range m.Values {
					if keyText(mv.Key) == fmt.Sprint(s) {
						next = mv.Value
						if _, isKey := s.(mapKey); isKey {
							next = mv.Key
						}
						break
					}
				}
			}
		case int:
			if seq, ok := n.(*ast.SequenceNode); ok && s < len(seq.Values) {
				next = seq.Values[s]
			}
		}
		if next == nil || next.GetToken() == nil {
			break
		}
		best, n = next, unwrap(next)
	}
	e := &ConfigError{Msg: msg}
	if best != nil {
		e = errorAt(best.GetToken(), msg)
	}
	e.Path = keyPath(path)
	return e
}

// keyPath writes a locator path as a key path: contracts.rules[2].files.
func keyPath(path []any) string {
	var b strings.Builder
	for _, step := range path {
		switch s := step.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s+1)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// unwrap looks through anchors, tags and explicit "? key" markers.
func unwrap(n ast.Node) ast.Node {
	for {
		var inner ast.Node
		switch v := n.(type) {
		case *ast.AnchorNode:
			inner = v.Value
		case *ast.TagNode:
			inner = v.Value
		case *ast.MappingKeyNode:
			inner = v.Value
		}
		if inner == nil {
			return n
		}
		n = inner
	}
}

func keyText(k ast.Node) string {
	switch n := unwrap(k).(type) {
	case *ast.StringNode:
		return n.Value
	case nil:
		return ""
	default:
		if tk := n.GetToken(); tk != nil {
			return tk.Value
		}
		return ""
	}
}

func nodeWord(t ast.NodeType) string {
	switch t {
	case ast.SequenceType:
		return "a list"
	case ast.IntegerType, ast.FloatType, ast.InfinityType, ast.NanType:
		return "a number"
	case ast.LiteralType:
		return "a string"
	case ast.NullType:
		return "null"
	case ast.AliasType, ast.AnchorType:
		return "an " + t.YAMLName()
	}
	return "a " + t.YAMLName()
}

func typeWord(t reflect.Type) string {
	if t == nil {
		return "nothing"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeWord(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a value"
}

// yamlError turns a go-yaml error into a ConfigError with its position and a
// one-line message (go-yaml's own Error() appends a source excerpt).
func yamlError(err error) *ConfigError {
	var (
		typ     *yaml.TypeError
		node    *yaml.UnexpectedNodeTypeError
		unknown *yaml.UnknownFieldError
		over    *yaml.OverflowError
		ye      yaml.Error
	)
	switch {
	case errors.As(err, &typ):
		return errorAt(typ.Token, fmt.Sprintf("expected %s, not %s", typeWord(typ.DstType), typeWord(typ.SrcType)))
	case errors.As(err, &node):
		return errorAt(node.Token, fmt.Sprintf("expected %s, not %s", nodeWord(node.Expected), nodeWord(node.Actual)))
	case errors.As(err, &unknown) && unknown.Token != nil:
		return errorAt(unknown.Token, "unknown key "+quote(unknown.Token.Value))
	case errors.As(err, &over):
		return errorAt(over.Token, "number "+quote(over.SrcNum)+" is too large")
	case errors.As(err, &ye):
		return errorAt(ye.GetToken(), ye.GetMessage())
	}
	return &ConfigError{Msg: oneLine(err.Error())}
}

// errorAt returns a ConfigError at tk (line 0 when tk is nil).
func errorAt(tk *token.Token, msg string) *ConfigError {
	e := &ConfigError{Msg: oneLine(msg)}
	if tk != nil {
		e.Line, e.Column = max(tk.Position.Line, 0), max(tk.Position.Column, 0)
	}
	return e
}

// oneLine returns the first line of s.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

// quote quotes a value from the file for a message, cut short if long.
func quote(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "..."
	}
	return fmt.Sprintf("%q", s)
}

// valueWord describes a decoded value for a message.
func valueWord(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool, float64:
		return fmt.Sprint(v)
	}
	return typeWord(reflect.TypeOf(v))
}

// nearest returns the word of words within two edits of w, if any.
func nearest(w string, words []string) string {
	best, bestD := "", 3
	for _, c := range words {
		if d := editDistance(strings.ToLower(w), c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
