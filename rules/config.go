package rules

import (
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

// Separation says which roles must be distinct people (DESIGN §1).
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

// Config is a repository's configuration (DESIGN §7). Logins are stored as
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
	// Pins are the accounts the logins named here (leads, verifiers, pilots,
	// critics' reviewers) had when the configuration first named them: lower
	// case login -> user id. Filled by the adapters, never by the file: a
	// login given up and taken by someone else names no one (DESIGN §1).
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
	Checks map[string][]string `yaml:"checks" doc:"Activity (unit-test, typecheck, lint, e2e) -> the check run names and status contexts that count for it ('*' matches any text). Given, it replaces the whole default map."`
	// Apps pins a check name to the GitHub App (its slug) that must create
	// its check runs; a run of that name by another App does not count.
	Apps map[string]string `yaml:"apps" doc:"Check name -> the slug of the GitHub App that must create it, e.g. {test: github-actions}."`
	// StatusCreators are the logins whose commit statuses count; empty: any
	// non-builder's.
	StatusCreators []string `yaml:"status_creators" doc:"Logins whose commit statuses count. Empty: anyone's who is not a builder of the task."`
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
		Contracts: ContractConfig{
			Checks: map[string][]string{
				"unit-test": {"test"}, "typecheck": {"typecheck"}, "lint": {"lint"}, "e2e": {"e2e"},
			},
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
// verifiers, agents' pilots and critics' reviewers.
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
		return Config{}, &ConfigError{Msg: fmt.Sprintf("file is larger than %d bytes", maxConfigBytes)}
	}
	body, raw, err := readYAML(data)
	if err != nil {
		return Config{}, err
	}
	c := DefaultConfig()
	if body == nil {
		return c, nil
	}
	at := locator{body}
	if err := raw.apply(&c, at); err != nil {
		return Config{}, err
	}
	if err := c.normalize(at); err != nil {
		return Config{}, err
	}
	return c, nil
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
	if err := yaml.NodeToValue(body, &raw, yaml.Strict()); err != nil {
		return nil, raw, yamlError(err)
	}
	// The decoder's strict mode lets keys that are not strings (0:, true:)
	// through: every key is checked against the file's keys again.
	k := keyChecker{anchors: map[string]ast.Node{}}
	ast.Walk(&k, body)
	if err := k.check(body, reflect.TypeOf(raw), 0); err != nil {
		return nil, raw, err
	}
	return body, raw, nil
}

// keyChecker checks that every mapping read into a struct has only the
// struct's keys.
type keyChecker struct {
	anchors map[string]ast.Node // anchor name -> its value
}

// Visit collects the anchors (ast.Visitor).
func (k *keyChecker) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
		k.anchors[a.Name.GetToken().Value] = a.Value
	}
	return k
}

// check checks node n, read into a value of type t.
func (k *keyChecker) check(n ast.Node, t reflect.Type, depth int) *ConfigError {
	if n == nil || depth > 64 {
		return nil
	}
	n = unwrap(n)
	if a, ok := n.(*ast.AliasNode); ok {
		if a.Value == nil {
			return nil
		}
		return k.check(k.anchors[a.Value.GetToken().Value], t, depth+1)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			return nil // the decoder said what is wrong with it
		}
		for _, mv := range m.Values {
			key := keyText(mv.Key)
			if _, merge := unwrap(mv.Key).(*ast.MergeKeyNode); merge {
				if err := k.checkMerge(mv.Value, t, depth+1); err != nil {
					return err
				}
				continue
			}
			f, ok := fieldByKey(t, key)
			if _, isString := unwrap(mv.Key).(*ast.StringNode); !ok || !isString {
				return errorAt(mv.Key.GetToken(), "unknown key "+quote(key))
			}
			if err := k.check(mv.Value, f.Type, depth+1); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				if err := k.check(v, t.Elem(), depth+1); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if m, ok := n.(*ast.MappingNode); ok {
			for _, mv := range m.Values {
				if err := k.check(mv.Value, t.Elem(), depth+1); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkMerge checks the value of a merge key ("<<: *x" or "<<: [*x, *y]").
func (k *keyChecker) checkMerge(n ast.Node, t reflect.Type, depth int) *ConfigError {
	if seq, ok := unwrap(n).(*ast.SequenceNode); ok {
		for _, v := range seq.Values {
			if err := k.check(v, t, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return k.check(n, t, depth)
}

// fieldByKey returns the field of struct type t read from key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0] == key {
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
	Gate *rawGate `yaml:"gate"`
}

// apply overlays the keys r sets on c.
func (r *rawConfig) apply(c *Config, at locator) error {
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
		if err := setNumber(&c.Tasks.MaxPerPR, t.MaxPerPR, at, "tasks", "max_per_pr"); err != nil {
			return err
		}
	}
	if e := r.Escalation; e != nil {
		if err := setNumber(&c.Escalation.Rejections, e.Rejections, at, "escalation", "rejections"); err != nil {
			return err
		}
		if err := setNumber(&c.Escalation.FailedAttempts, e.FailedAttempts, at, "escalation", "failed_attempts"); err != nil {
			return err
		}
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
	return nil
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
	var err error
	if c.Leads, err = people(c.Leads, "leads", at); err != nil {
		return err
	}
	if c.Verifiers, err = people(c.Verifiers, "verifiers", at); err != nil {
		return err
	}
	if c.Agents, err = agents(c.Agents, at); err != nil {
		return err
	}
	if !slices.Contains(separations, c.Separation) {
		return at.errorf("separation must be auto, triple or minimum, not "+quote(string(c.Separation)), "separation")
	}
	if !slices.Contains(trackModes, c.Tasks.Track) {
		return at.errorf("tasks.track must be all, milestoned or labeled, not "+quote(c.Tasks.Track), "tasks", "track")
	}
	if c.Tasks.Track == "labeled" && strings.TrimSpace(c.Tasks.Label) == "" {
		return at.errorf("tasks.label must name a label when tasks.track is labeled", "tasks", "label")
	}
	if c.Tasks.MaxPerPR < 1 {
		return at.errorf(fmt.Sprintf("tasks.max_per_pr must be at least 1, not %d", c.Tasks.MaxPerPR), "tasks", "max_per_pr")
	}
	if c.Tasks.IgnoreLabels, err = words(c.Tasks.IgnoreLabels, strings.EqualFold, at, "tasks", "ignore_labels"); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		n   int
	}{{"rejections", c.Escalation.Rejections}, {"failed_attempts", c.Escalation.FailedAttempts}} {
		if f.n < 1 {
			return at.errorf(fmt.Sprintf("escalation.%s must be at least 1, not %d", f.key, f.n), "escalation", f.key)
		}
	}
	if err := c.Gate.normalize(at); err != nil {
		return err
	}
	return c.Contracts.normalize(at)
}

// normalize checks the contracts: settings (see Config.normalize).
func (k *ContractConfig) normalize(at locator) error {
	var err error
	if k.Checks, err = checks(k.Checks, at); err != nil {
		return err
	}
	if k.Apps, err = apps(k.Apps, at); err != nil {
		return err
	}
	if k.StatusCreators, err = logins(k.StatusCreators, at, "contracts", "status_creators"); err != nil {
		return err
	}
	if k.Contradictions, err = words(k.Contradictions, strings.EqualFold, at, "contracts", "contradictions"); err != nil {
		return err
	}
	if k.Advisory, err = words(k.Advisory, sameWords, at, "contracts", "advisory"); err != nil {
		return err
	}
	if k.Skip, err = words(k.Skip, sameWords, at, "contracts", "skip"); err != nil {
		return err
	}
	if k.Rules, err = fileRules(k.Rules, at, "contracts", "rules"); err != nil {
		return err
	}
	k.Critics, err = critics(k.Critics, at)
	return err
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
	var out map[string]string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if strings.TrimSpace(k) == "" {
			return nil, at.errorf("contracts.apps: a check name is empty", "contracts", "apps", mapKey(k))
		}
		if !slugRE.MatchString(m[k]) {
			return nil, at.errorf(fmt.Sprintf("contracts.apps.%s: %s is not a GitHub App's slug (lower-case letters, digits and '-', as in its URL)", k, quote(m[k])), "contracts", "apps", k)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = m[k]
	}
	return out, nil
}

// logins checks and dedups a list of accounts (people or bots, not teams),
// a leading "@" stripped.
func logins(list []string, at locator, path ...any) ([]string, error) {
	var out []string
	for i, e := range list {
		e = strings.TrimPrefix(e, "@")
		if !loginRE.MatchString(e) && !botRE.MatchString(e) {
			return nil, at.errorf(fmt.Sprintf("%s: %s is not a GitHub login", dotted(path), quote(list[i])), append(slices.Clip(path), i)...)
		}
		if !slices.ContainsFunc(out, func(o string) bool { return SameLogin(o, e) }) {
			out = append(out, e)
		}
	}
	return out, nil
}

// critics checks contracts.critics: critic name -> its reviewers (logins and
// teams, as in leads:), a leading "@" stripped from logins, duplicates removed.
func critics(m map[string][]string, at locator) (map[string][]string, error) {
	var out map[string][]string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if !criticRE.MatchString(name) {
			return nil, at.errorf(fmt.Sprintf("contracts.critics: %s is not a critic's name (letters, digits, '.', '_' and '-')", quote(name)), "contracts", "critics", mapKey(name))
		}
		var reviewers []string
		for i, e := range m[name] {
			if !teamRE.MatchString(e) {
				e = strings.TrimPrefix(e, "@")
				if !loginRE.MatchString(e) && !botRE.MatchString(e) {
					return nil, at.errorf(fmt.Sprintf("contracts.critics.%s: %s is not a GitHub login or an @org/team", name, quote(m[name][i])), "contracts", "critics", name, i)
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
	return out, nil
}

// fileRules checks a list of file rules, at path in the file: each names
// valid, relative glob patterns and asks for something. Duplicate patterns
// and critics are removed; an empty critics list is nil.
func fileRules(rules []FileRule, at locator, path ...any) ([]FileRule, error) {
	var out []FileRule
	for i, r := range rules {
		where := fmt.Sprintf("%s: rule %d", dotted(path), i+1)
		rp := append(slices.Clip(path), i)
		if len(r.Files) == 0 {
			return nil, at.errorf(where+": files must list at least one pattern", append(slices.Clip(rp), "files")...)
		}
		var files []string
		for j, f := range r.Files {
			if msg := badPattern(f); msg != "" {
				return nil, at.errorf(fmt.Sprintf("%s: files: %s %s", where, quote(f), msg), append(slices.Clip(rp), "files", j)...)
			}
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		if !slices.Contains(e2eTimings, r.E2E) {
			return nil, at.errorf(fmt.Sprintf("%s: e2e must be immediate or deferred, not %s", where, quote(r.E2E)), append(slices.Clip(rp), "e2e")...)
		}
		var names []string
		for j, c := range r.Critics {
			if !criticRE.MatchString(c) {
				return nil, at.errorf(fmt.Sprintf("%s: critics: %s is not a critic's name (letters, digits, '.', '_' and '-')", where, quote(c)), append(slices.Clip(rp), "critics", j)...)
			}
			if !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
		if !r.UnitTest && r.E2E == "" && len(names) == 0 {
			return nil, at.errorf(where+": it asks for nothing: set unit-test, e2e or critics", append(slices.Clip(rp), mapKey("files"))...)
		}
		out = append(out, FileRule{Files: files, UnitTest: r.UnitTest, E2E: r.E2E, Critics: names})
	}
	return out, nil
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
	var out []string
	for i, e := range list {
		if !teamRE.MatchString(e) {
			e = strings.TrimPrefix(e, "@")
			if !loginRE.MatchString(e) && !botRE.MatchString(e) {
				return nil, at.errorf(fmt.Sprintf("%s: %s is not a GitHub login or an @org/team", key, quote(list[i])), key, i)
			}
		}
		if !slices.ContainsFunc(out, func(o string) bool { return SameLogin(o, e) }) {
			out = append(out, e)
		}
	}
	return out, nil
}

// agents checks the agents map: account (login, optionally with [bot]) ->
// pilot (a person's login). Accounts that differ only in case must agree on
// the pilot; the one that sorts first is kept.
func agents(m map[string]string, at locator) (map[string]string, error) {
	keys := slices.Sorted(maps.Keys(m))
	var out map[string]string
	for _, k := range keys {
		a, p := strings.TrimPrefix(k, "@"), strings.TrimPrefix(m[k], "@")
		if !loginRE.MatchString(a) && !botRE.MatchString(a) {
			return nil, at.errorf(fmt.Sprintf("agents: %s is not a GitHub login", quote(k)), "agents", mapKey(k))
		}
		if !loginRE.MatchString(p) {
			return nil, at.errorf(fmt.Sprintf("agents: the pilot of %s must be a person's GitHub login, not %s", quote(k), quote(m[k])), "agents", k)
		}
		if out == nil {
			out = map[string]string{}
		}
		if prev, ok := (Config{Agents: out}).Pilot(a); ok {
			if !SameLogin(prev, p) {
				return nil, at.errorf(fmt.Sprintf("agents: %s is listed twice with different pilots", quote(a)), "agents", mapKey(k))
			}
			continue
		}
		out[a] = p
	}
	return out, nil
}

// checks checks contracts.checks: activity -> check names.
func checks(m map[string][]string, at locator) (map[string][]string, error) {
	var out map[string][]string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(CheckedActivities, k) {
			msg := fmt.Sprintf("contracts.checks: %s is not an activity CI checks (%s)", quote(k), strings.Join(CheckedActivities, ", "))
			if near := nearest(k, CheckedActivities); near != "" {
				msg += "; did you mean " + quote(near) + "?"
			}
			return nil, at.errorf(msg, "contracts", "checks", mapKey(k))
		}
		if m[k] == nil { // "typecheck:" with nothing after it: a half-edited line must not switch a gate off
			return nil, at.errorf(fmt.Sprintf("contracts.checks.%s is empty: list the check names that count for it, or write [] to leave it to the verifier on purpose", k), "contracts", "checks", mapKey(k))
		}
		names, err := words(m[k], func(a, b string) bool { return a == b }, at, "contracts", "checks", k)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[k] = names
	}
	return out, nil
}

// words checks that no entry of a list is blank, and dedups it.
func words(list []string, same func(a, b string) bool, at locator, path ...any) ([]string, error) {
	var out []string
	for i, w := range list {
		if strings.TrimSpace(w) == "" {
			return nil, at.errorf(fmt.Sprintf("%s: entries must not be empty", dotted(path)), append(path, i)...)
		}
		if !slices.ContainsFunc(out, func(o string) bool { return same(o, w) }) {
			out = append(out, w)
		}
	}
	return out, nil
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
	if best == nil {
		return &ConfigError{Msg: msg}
	}
	return errorAt(best.GetToken(), msg)
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
