package rules

import (
	_ "embed"
	"fmt"
	"iter"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// ContractType says how a task's completion can be verified.
type ContractType string

// The contract types.
const (
	// Verifiable: automated criteria (CI checks, critics' reviews) say whether it is done.
	Verifiable ContractType = "verifiable"
	// Advisory: exploratory work no automated test can judge; a lead reviews
	// its output and only a lead's /verify completes it.
	Advisory ContractType = "advisory"
	// Skip: trivial work (docs, comments, typos): lint and typecheck only.
	Skip ContractType = "skip"
)

// The activities a criterion can ask for.
const (
	ActTypecheck = "typecheck"
	ActLint      = "lint"
	ActUnitTest  = "unit-test"
	ActE2E       = "e2e"
	ActCritic    = "critic"
	// ActCI is the repository's CI as it is: while contracts.checks is
	// unset, this one criterion stands for typecheck, lint, unit-test and
	// immediate e2e, and every trusted run on the head must pass.
	ActCI = "ci"
)

// E2E timings.
const (
	TimingImmediate = "immediate" // runs on the pull request: blocks /verify
	TimingDeferred  = "deferred"  // runs with the goal's integration check: shown, not blocking
)

// Result is where a criterion stands.
type Result string

// The results.
const (
	ResultPending   Result = "pending"   // not reported yet, or running
	ResultPass      Result = "pass"      // its checks succeeded (or its critic approved)
	ResultFail      Result = "fail"      // a check failed, timed out, was cancelled or needs action
	ResultDeferred  Result = "deferred"  // deferred e2e: checked with the goal, not the task
	ResultUnchecked Result = "unchecked" // nothing automated can check it (no check names mapped, or no pull request): the verifier does
)

// Contract is a task's verification contract: how its completion will be
// verified, written before work starts.
type Contract struct {
	Type ContractType `json:"type"`
	// Why says what decided the type, e.g. `"investigate" in the title`.
	Why      string      `json:"why,omitempty"`
	Criteria []Criterion `json:"criteria"`
	// Expected are the paths the issue body names (at most maxExpected).
	Expected []string `json:"expected,omitempty"`
	// From is how it was generated: "auto", or "lead" after /contract.
	From string    `json:"from"`
	At   time.Time `json:"at"`
}

// Criterion is one thing that must hold before the task can be verified.
type Criterion struct {
	Activity    string `json:"activity"`
	Timing      string `json:"timing,omitempty"` // e2e: immediate or deferred
	Critic      string `json:"critic,omitempty"` // critic: its name, e.g. "frontend-critic"
	Description string `json:"description"`
	// Files are some of the files that call for it (at most 3), MoreFiles how
	// many others do.
	Files     []string `json:"files,omitempty"`
	MoreFiles int      `json:"more_files,omitempty"`

	// Where it stands, filled in from CI and reviews (not by generation).
	Result  Result    `json:"result,omitempty"`
	Detail  string    `json:"detail,omitempty"` // e.g. "test: failure on #2 (abc1234)"
	URL     string    `json:"url,omitempty"`    // the run that decided it
	Attempt int       `json:"attempt,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// Key identifies a criterion within a contract: its activity, and its timing
// or critic.
func (c Criterion) Key() string {
	switch {
	case c.Critic != "":
		return c.Activity + ":" + c.Critic
	case c.Timing != "":
		return c.Activity + ":" + c.Timing
	}
	return c.Activity
}

// ContractInput is what a contract is generated from.
type ContractInput struct {
	Title, Body string
	// Changed are the files the task's linked pull requests change.
	Changed []string
	// Type is "" to classify the task from its words; else the type a lead
	// forced with /contract.
	Type ContractType
	At   time.Time
}

// The contract's From.
const (
	fromAuto = "auto"
	fromLead = "lead"
)

// GenerateContract writes a task's contract: its type,
// from the task's words (Classify) unless in.Type forces one; for a
// verifiable task, typecheck and lint, and what the file rules call for, for
// each file the body names (ExpectedFiles) or the pull requests change; for
// skip, typecheck and lint; for advisory, nothing. Criteria come one per
// Key, each with up to 3 of the files that call for it, in the order
// typecheck, lint, unit-test, e2e immediate, e2e deferred, critics by name.
// While contracts.checks is unset (WholeCI), one ci criterion stands first
// for typecheck, lint, unit-test and e2e immediate (foldCI).
// An in.Type other than the three types is ignored (the task is classified).
func GenerateContract(cfg ContractConfig, in ContractInput) Contract {
	lines := proseLines(in.Body)
	c := Contract{From: fromAuto, Expected: expectedIn(lines), At: in.At}
	switch in.Type {
	case Verifiable, Advisory, Skip:
		c.Type, c.From, c.Why = in.Type, fromLead, "set by a lead with /contract"
	default:
		c.Type, c.Why = classifyLines(cfg, in.Title, lines)
	}
	switch c.Type {
	case Advisory:
		c.Criteria = []Criterion{}
	case Skip:
		c.Criteria = alwaysCriteria()
	default:
		c.Criteria = append(alwaysCriteria(), fileCriteriaFor(effectiveRules(cfg), unionFiles(c.Expected, in.Changed))...)
	}
	if cfg.WholeCI() && c.Type != Advisory {
		c.Criteria = foldCI(c.Criteria)
	}
	return c
}

// foldCI replaces the criteria CI checks (typecheck, lint, unit-test, e2e
// now) by one ci criterion, first: with contracts.checks unset no run is
// named for an activity, and the repository's whole CI decides them all.
// Deferred e2e and critics stay.
func foldCI(cs []Criterion) []Criterion {
	out := []Criterion{{Activity: ActCI, Description: "The repository's CI passes on the head"}}
	for _, k := range cs {
		if k.Activity == ActCI || (slices.Contains(CheckedActivities, k.Activity) && k.Timing != TimingDeferred) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// alwaysCriteria are the criteria of every contract that has any.
func alwaysCriteria() []Criterion {
	return []Criterion{
		{Activity: ActTypecheck, Description: "No type errors"},
		{Activity: ActLint, Description: "No lint errors"},
	}
}

// unionFiles is a then b, without duplicates or empty paths.
func unionFiles(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	seen := make(map[string]bool, len(a)+len(b))
	for _, list := range [][]string{a, b} {
		for _, f := range list {
			if f != "" && !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// maxCriterionFiles is how many of the files calling for a criterion it names.
const maxCriterionFiles = 3

// criterionFiles gathers the files that call for one criterion.
type criterionFiles struct {
	files []string
	more  int
}

func (f *criterionFiles) add(file string) {
	if len(f.files) < maxCriterionFiles {
		f.files = append(f.files, file)
	} else {
		f.more++
	}
}

// note is " (a, b, c and 4 more)", or "" without files.
func (f *criterionFiles) note() string {
	if len(f.files) == 0 {
		return ""
	}
	s := " (" + strings.Join(f.files, ", ")
	if f.more > 0 {
		s += fmt.Sprintf(" and %d more", f.more)
	}
	return s + ")"
}

func (f *criterionFiles) criterion(c Criterion, description string) Criterion {
	c.Description, c.Files, c.MoreFiles = description+f.note(), f.files, f.more
	return c
}

// fileCriteriaFor are the criteria rules call for on files, in contract order.
func fileCriteriaFor(rs *ruleSet, files []string) []Criterion {
	var unit, now, later criterionFiles
	critics := map[string]*criterionFiles{}
	matched := make([]bool, len(rs.rules))
	var names []string // the critics a file calls for, reused from file to file
	for _, f := range files {
		rs.match(f, matched)
		u, n, l := false, false, false
		names = names[:0]
		for i, r := range rs.rules {
			if !matched[i] {
				continue
			}
			u = u || r.UnitTest
			n = n || r.E2E == TimingImmediate
			l = l || r.E2E == TimingDeferred
			for _, c := range r.Critics {
				if !slices.Contains(names, c) {
					names = append(names, c)
				}
			}
		}
		for _, x := range []struct {
			on  bool
			acc *criterionFiles
		}{{u, &unit}, {n, &now}, {l, &later}} {
			if x.on {
				x.acc.add(f)
			}
		}
		for _, c := range names {
			if critics[c] == nil {
				critics[c] = &criterionFiles{}
			}
			critics[c].add(f)
		}
	}
	var out []Criterion
	if len(unit.files) > 0 {
		out = append(out, unit.criterion(Criterion{Activity: ActUnitTest}, "Unit tests pass"))
	}
	if len(now.files) > 0 {
		out = append(out, now.criterion(Criterion{Activity: ActE2E, Timing: TimingImmediate}, "End-to-end tests pass now"))
	}
	if len(later.files) > 0 {
		out = append(out, later.criterion(Criterion{Activity: ActE2E, Timing: TimingDeferred}, "End-to-end tests, deferred to the goal's integration check"))
	}
	for _, name := range slices.Sorted(maps.Keys(critics)) {
		out = append(out, critics[name].criterion(Criterion{Activity: ActCritic, Critic: name}, name+" approves"))
	}
	return out
}

// ContractCriteriaChanged says in short what changed from one contract to the
// next: its type ("type verifiable → advisory"), then the criteria added and
// removed, by Key ("+ unit-test, + critic:frontend-critic; − e2e:immediate").
// It is "" when the type and the criteria's keys are the same. A nil
// contract has no type and no criteria.
func ContractCriteriaChanged(old, next *Contract) string {
	var parts []string
	if t, u := contractTypeOf(old), contractTypeOf(next); t != u {
		parts = append(parts, fmt.Sprintf("type %s → %s", t, u))
	}
	was, is := criteriaKeys(old), criteriaKeys(next)
	if s := keysNotIn(is, was, "+ "); s != "" {
		parts = append(parts, s)
	}
	if s := keysNotIn(was, is, "− "); s != "" {
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func contractTypeOf(c *Contract) ContractType {
	if c == nil || c.Type == "" {
		return "none"
	}
	return c.Type
}

func criteriaKeys(c *Contract) []string {
	if c == nil {
		return nil
	}
	keys := make([]string, 0, len(c.Criteria))
	for _, k := range c.Criteria {
		if key := k.Key(); !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// keysNotIn lists the keys of a that b lacks, each after mark.
func keysNotIn(a, b []string, mark string) string {
	var out []string
	for _, k := range a {
		if !slices.Contains(b, k) {
			out = append(out, mark+k)
		}
	}
	return strings.Join(out, ", ")
}

// Classify says what type of contract a task gets from its words:
// skip if the title says one of cfg.Skip, else advisory if it says one of
// cfg.Advisory; else the same for the body (its prose: not fenced code
// blocks, block quotes or HTML comments, as issue templates have); else
// verifiable. The reason names the word and where, e.g. `"investigate" in
// the title` (the one said first, when several are).
//
// A word or phrase matches as whole words, in any case, with any spacing
// between its words (a line break too, but not a blank line). A single word
// also matches in its simple inflections: +s, +es, +ed, +d, +ing, with a
// final e dropped (investigating) or a final consonant doubled (planned); no
// other derivation ("designer", "reviewer" and "redesign" are not "design"
// or "review"). Only letters, digits and '_' make words, but the words of a
// path are not prose: "src/plan/x.go" and "docs/guide.md" say no "plan" or
// "docs", "comment.go" no "comment"; a documentation file's name is,
// "README.md" says "readme".
func Classify(cfg ContractConfig, title, body string) (ContractType, string) {
	return classifyLines(cfg, title, proseLines(body))
}

func classifyLines(cfg ContractConfig, title string, body []string) (ContractType, string) {
	skip, advisory := phrasesFor(cfg.Skip, true), phrasesFor(cfg.Advisory, true)
	for _, in := range []struct{ where, text string }{
		{"title", title},
		{"body", strings.Join(body, "\n")},
	} {
		folded := foldCase(in.text)
		for _, k := range []struct {
			typ  ContractType
			list []phrase
		}{{Skip, skip}, {Advisory, advisory}} {
			if p, _, _, ok := firstPhrase(folded, k.list); ok {
				return k.typ, fmt.Sprintf("%q in the %s", p.said, in.where)
			}
		}
	}
	return Verifiable, "no advisory or skip words"
}

// maxContradictionLine bounds the line FindContradiction quotes, in characters.
const maxContradictionLine = 200

// FindContradiction finds the first of phrases that text says,
// matched as Classify matches words but without inflections, in text's prose
// (not fenced code blocks, block quotes or HTML comments). It returns the
// phrase (as configured, single-spaced) and the line that says it, trimmed
// and clipped to 200 characters around the phrase.
func FindContradiction(text string, phrases []string) (phrase, line string, ok bool) {
	prose := strings.Join(proseLines(text), "\n")
	p, start, end, ok := firstPhrase(foldCase(prose), phrasesFor(phrases, false))
	if !ok {
		return "", "", false
	}
	return p.said, quoteLine(prose, start, end), true
}

// quoteLine is the line (or lines) of text that hold text[start:end], on one
// line, trimmed, clipped around it to maxContradictionLine characters.
func quoteLine(text string, start, end int) string {
	from := strings.LastIndexByte(text[:start], '\n') + 1
	to := len(text)
	if i := strings.IndexByte(text[end:], '\n'); i >= 0 {
		to = end + i
	}
	s := strings.ReplaceAll(text[from:to], "\n", " ")
	at := start - from
	trimmed := strings.TrimLeftFunc(s, unicode.IsSpace)
	at -= len(s) - len(trimmed)
	return clipAround(strings.TrimRightFunc(trimmed, unicode.IsSpace), max(at, 0), maxContradictionLine)
}

// clipAround shortens s to n characters around byte offset at, marking the
// cuts with "…".
func clipAround(s string, at, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	pos := utf8.RuneCountInString(s[:min(at, len(s))])
	begin := max(0, min(pos-n/4, len(r)-n))
	out := r[begin : begin+n]
	if begin > 0 {
		out[0] = '…'
	}
	if begin+n < len(r) {
		out[n-1] = '…'
	}
	return string(out)
}

// proseLines are the lines of a Markdown body as people wrote them for
// reading: lines in fenced code blocks and block quotes are empty, HTML
// comments are cut out (markdownLines reads the body).
func proseLines(body string) []string {
	var lines []string
	for l := range markdownLines(body) {
		s := ""
		if !l.code {
			s = strings.Join(l.visible, "")
		}
		if blockQuote(s) {
			s = ""
		}
		lines = append(lines, s)
	}
	return lines
}

// blockQuote reports whether line starts a block quote's line.
func blockQuote(line string) bool {
	col, i := indent(line, 0)
	return col <= 3 && i < len(line) && line[i] == '>'
}

// phrase is a word or phrase to look for in case-folded text.
type phrase struct {
	said  string   // as configured, single-spaced
	words []string // its words, case-folded; with inflections, the last is the stem
	ends  []string // what may follow the last word, longest first: "" alone without inflections
	left  bool     // it starts with a word character: a word must not go on before it
}

// phrasesFor compiles a list of words and phrases (cached).
func phrasesFor(list []string, inflect bool) []phrase {
	key := fmt.Sprint(inflect, "\x00", strings.Join(list, "\x00"))
	if v, ok := phraseCache.Load(key); ok {
		return v.([]phrase)
	}
	out := make([]phrase, 0, len(list))
	for _, s := range list {
		if p, ok := compilePhrase(s, inflect); ok {
			out = append(out, p)
		}
	}
	if phraseCacheSize.Add(1) <= maxCacheEntries {
		phraseCache.Store(key, out)
	}
	return out
}

// Caches of compiled phrase lists and glob patterns: a repository's
// configuration rarely changes, so a bounded number of entries is plenty.
const maxCacheEntries = 1024

var (
	phraseCache      sync.Map // string -> []phrase
	phraseCacheSize  atomic.Int64
	globCache        sync.Map // string -> globMatcher
	globCacheSize    atomic.Int64
	ruleSetCache     sync.Map // string -> *ruleSet
	ruleSetCacheSize atomic.Int64
)

func compilePhrase(s string, inflect bool) (phrase, bool) {
	words := strings.Fields(foldCase(s))
	if len(words) == 0 {
		return phrase{}, false
	}
	p := phrase{said: strings.Join(strings.Fields(s), " "), words: words, ends: []string{""}}
	if inflect && len(words) == 1 && asciiLetters(words[0]) {
		p.words[0], p.ends = inflections(words[0])
	}
	first, _ := utf8.DecodeRuneInString(p.words[0])
	p.left = isWordRune(first)
	return p, true
}

func asciiLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return len(s) >= 2
}

// inflections are a lower-case word's simple inflections, as a stem and the
// endings that may follow it, longest first: w, w+s, w+es, w+ed, w+d, w+ing;
// with a final e dropped before -ing; a final y after a consonant as -ies,
// -ied; a final consonant after one vowel doubled before -ed, -ing.
func inflections(w string) (stem string, ends []string) {
	n := len(w)
	forms := []string{w, w + "s", w + "es", w + "ed", w + "d", w + "ing"}
	vowel := func(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }
	last := w[n-1]
	switch {
	case last == 'e':
		forms = append(forms, w[:n-1]+"ing")
	case last == 'y' && !vowel(w[n-2]):
		forms = append(forms, w[:n-1]+"ies", w[:n-1]+"ied")
	case n >= 3 && !vowel(last) && strings.IndexByte("wxy", last) < 0 && vowel(w[n-2]) && !vowel(w[n-3]):
		forms = append(forms, w+w[n-1:]+"ed", w+w[n-1:]+"ing")
	}
	stem = w
	for _, f := range forms {
		for !strings.HasPrefix(f, stem) {
			stem = stem[:len(stem)-1]
		}
	}
	for _, f := range forms {
		if e := f[len(stem):]; !slices.Contains(ends, e) {
			ends = append(ends, e)
		}
	}
	slices.SortStableFunc(ends, func(a, b string) int { return len(b) - len(a) })
	return stem, ends
}

// firstPhrase finds the phrase of list that text (case-folded) says first,
// and where: text[start:end].
func firstPhrase(text string, list []phrase) (p phrase, start, end int, ok bool) {
	start = len(text) + 1
	for _, q := range list {
		if s, e, found := q.find(text); found && s < start {
			p, start, end, ok = q, s, e, true
		}
	}
	if !ok {
		return phrase{}, 0, 0, false
	}
	return p, start, end, true
}

// find finds p's first occurrence in text (case-folded): text[start:end].
func (p phrase) find(text string) (start, end int, ok bool) {
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], p.words[0])
		if i < 0 {
			break
		}
		i += from
		if e, ok := p.matchAt(text, i); ok {
			return i, e, true
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		from = i + size
	}
	return 0, 0, false
}

// matchAt reports whether p occurs at text[i:] (its first word is there), and where it ends.
func (p phrase) matchAt(text string, i int) (int, bool) {
	if before, _ := utf8.DecodeLastRuneInString(text[:i]); p.left && i > 0 && (isWordRune(before) || before == '/') {
		return 0, false
	}
	j := i + len(p.words[0])
	for _, w := range p.words[1:] {
		k := skipSpace(text, j)
		if k == j || !strings.HasPrefix(text[k:], w) {
			return 0, false
		}
		j = k + len(w)
	}
	for _, e := range p.ends {
		if !strings.HasPrefix(text[j:], e) {
			continue
		}
		k := j + len(e)
		if last, _ := utf8.DecodeLastRuneInString(text[:k]); !isWordRune(last) || wordEnds(text[k:]) {
			return k, true
		}
	}
	return 0, false
}

// Extensions of documentation files: "README.md" says "readme", but
// "comment.go" does not say "comment".
var docExtensions = setOf("md", "markdown", "mdx", "rst", "txt", "adoc")

// wordEnds reports whether a word ends where rest begins: at the end of the
// text, or before a character that is not a word's, a '/' (a path's words are
// not prose) or a '.' and a file's extension (but for documentation's).
func wordEnds(rest string) bool {
	after, size := utf8.DecodeRuneInString(rest)
	switch {
	case rest == "":
		return true
	case isWordRune(after), after == '/':
		return false
	case after != '.':
		return true
	}
	ext := rest[size:]
	if i := strings.IndexFunc(ext, func(r rune) bool { return !isWordRune(r) }); i >= 0 {
		ext = ext[:i]
	}
	return ext == "" || docExtensions[ext]
}

// skipSpace skips the white space at text[i:], with at most one line break.
func skipSpace(text string, i int) int {
	breaks := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsSpace(r) || r == '\n' && breaks == 1 {
			break
		}
		if r == '\n' {
			breaks++
		}
		i += size
	}
	return i
}

// foldCase lower-cases s rune by rune where that keeps the rune's length in
// bytes, so that offsets in the result are offsets in s.
func foldCase(s string) string {
	ascii := true
	for i := 0; i < len(s) && ascii; i++ {
		ascii = s[i] < utf8.RuneSelf
	}
	if ascii {
		return lowerASCII(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if l := unicode.ToLower(r); r != utf8.RuneError && utf8.RuneLen(l) == size {
			b.WriteRune(l)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// maxExpected bounds the paths ExpectedFiles returns.
const maxExpected = 50

// ExpectedFiles are the paths an issue body names, in order, without
// duplicates, at most maxExpected: in its prose (not fenced code blocks,
// block quotes or HTML comments), the words that contain a '/', or end in a
// known extension (.go, .tsx, .md, .yml, ...), or are well-known file names
// (Dockerfile, Makefile, README, go.mod, ...); and in inline code (`...`),
// also a word with any extension. Surrounding punctuation and emphasis, a
// leading "./" and a ":12" or "#L12" line reference are dropped. URLs, e-mail
// addresses, @mentions, issue references, version numbers (1.2.3), dates and
// abbreviations (e.g., i.e., and/or, Node.js) are not paths.
func ExpectedFiles(body string) []string {
	return expectedIn(proseLines(body))
}

func expectedIn(lines []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range lines {
		for tok, code := range lineTokens(line) {
			p, ok := pathToken(tok, code)
			if !ok || seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
			if len(out) == maxExpected {
				return out
			}
		}
	}
	return out
}

// lineTokens yields the words of a line of prose, and whether each is all of
// an inline code span.
func lineTokens(line string) iter.Seq2[string, bool] {
	return func(yield func(string, bool) bool) {
		plain := func(s string) bool {
			for _, w := range strings.FieldsFunc(s, tokenSeparator) {
				if !yield(w, false) {
					return false
				}
			}
			return true
		}
		for i := 0; i < len(line); {
			j := strings.IndexByte(line[i:], '`')
			if j < 0 {
				plain(line[i:])
				return
			}
			if !plain(line[i : i+j]) {
				return
			}
			i += j
			n := len(line[i:]) - len(strings.TrimLeft(line[i:], "`"))
			end := closingTicks(line, i+n, n)
			if end < 0 {
				i += n // not a code span: literal backticks
				continue
			}
			if w := strings.Fields(line[i+n : end]); len(w) == 1 {
				if !yield(w[0], true) {
					return
				}
			} else if !plain(line[i+n : end]) {
				return
			}
			i = end + n
		}
	}
}

// closingTicks finds the run of exactly n backticks that closes a code span
// opened before line[from:], or -1.
func closingTicks(line string, from, n int) int {
	for from < len(line) {
		j := strings.IndexByte(line[from:], '`')
		if j < 0 {
			return -1
		}
		from += j
		m := len(line[from:]) - len(strings.TrimLeft(line[from:], "`"))
		if m == n {
			return from
		}
		from += m
	}
	return -1
}

func tokenSeparator(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune("()[]{}<>\"',;|=`", r)
}

// Known extensions of source, configuration and documentation files.
var knownExtensions = setOf(
	"go", "ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs", "vue", "svelte", "astro",
	"py", "pyi", "ipynb", "rb", "erb", "rs", "java", "kt", "kts", "scala", "groovy", "gradle",
	"c", "cc", "cpp", "cxx", "h", "hh", "hpp", "hxx", "m", "mm", "cs", "fs", "fsx", "vb", "swift",
	"php", "ex", "exs", "heex", "erl", "hrl", "clj", "cljs", "edn", "hs", "elm", "dart", "lua", "r",
	"jl", "pl", "pm", "zig", "nim", "sql", "graphql", "gql", "proto", "tf", "tfvars", "hcl",
	"sh", "bash", "zsh", "fish", "ps1", "bat",
	"html", "htm", "css", "scss", "sass", "less", "svg", "tmpl", "tpl", "j2", "hbs",
	"md", "mdx", "markdown", "rst", "adoc", "txt",
	"yml", "yaml", "json", "jsonc", "json5", "toml", "ini", "cfg", "conf", "env", "xml", "csv", "lock",
)

// Well-known files without (or with unusual) extensions.
var knownNames = setOf(
	"Dockerfile", "Containerfile", "Makefile", "GNUmakefile", "Justfile", "Taskfile", "Jenkinsfile",
	"Vagrantfile", "Gemfile", "Rakefile", "Procfile", "Brewfile", "README", "LICENSE", "CHANGELOG",
	"CONTRIBUTING", "CODEOWNERS", "go.mod", "go.sum", "go.work", ".gitignore", ".gitattributes",
	".dockerignore", ".editorconfig", ".env", ".npmrc", ".nvmrc",
)

// Words that look like paths but are not (lower case).
var notPaths = setOf(
	"e.g", "i.e", "etc", "a.k.a", "vs", "n/a", "w/", "w/o", "and/or", "either/or", "on/off", "yes/no",
	"read/write", "input/output", "client/server", "true/false", "ci/cd", "tcp/ip", "i/o", "pros/cons",
	"he/she", "s/he", "his/her", "24/7",
	"node.js", "next.js", "nuxt.js", "vue.js", "react.js", "express.js", "three.js", "chart.js",
	"ember.js", "backbone.js", "angular.js", "alpine.js", "d3.js", "p5.js", "deno.js", "nest.js",
	"solid.js", "preact.js", "socket.io", "moment.js", "day.js", "knockout.js", "handlebars.js",
)

// Top-level domains that make a first path segment a host name.
var domainTLDs = setOf("com", "org", "net", "io", "dev", "app", "co", "gov", "edu", "ai", "me", "info", "us", "uk", "de", "xyz", "cloud")

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

var versionRE = regexp.MustCompile(`^[vV]?\d+(\.\d+)+([-+][0-9A-Za-z.-]*)?$`)

// pathToken returns the path a word names, if it names one; code says the
// word is all of an inline code span.
func pathToken(tok string, code bool) (string, bool) {
	if !strings.ContainsAny(tok, "./") && !knownNames[strings.Trim(tok, ".,;:!?*_")] {
		return "", false // the common case: a plain word
	}
	t := trimToken(tok)
	if t == "" || !pathChars(t) || notAPath(t) {
		return "", false
	}
	switch {
	case knownNames[t]:
		return t, true
	case strings.Contains(t, "/"):
		return t, slashPath(t)
	}
	dot := strings.LastIndexByte(t, '.')
	if dot == 0 {
		return t, code && len(t) > 1 // a dotfile, as in `.eslintrc`
	}
	if dot < 0 || !strings.ContainsFunc(t[:dot], isWordRune) {
		return "", false
	}
	ext := t[dot+1:]
	if knownExtensions[strings.ToLower(ext)] {
		return t, true
	}
	return t, code && len(ext) <= 10 && strings.ContainsFunc(ext, unicode.IsLetter) && !strings.ContainsFunc(ext, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// trimToken drops what surrounds a path in prose: punctuation, emphasis, a
// line reference, a leading "./".
func trimToken(t string) string {
	for {
		was := t
		t = strings.TrimLeft(t, "([{<\"'")
		t = strings.TrimRight(t, ")]}>\"'.,;:!?…")
		t = trimEmphasis(t)
		t = trimLineRef(t)
		for strings.HasPrefix(t, "./") {
			t = t[2:]
		}
		if t == was {
			return t
		}
	}
}

// trimEmphasis drops Markdown emphasis (* and **, _ and __ at the end), but
// not the stars of a glob ("*.go", "src/**", "settings.*").
func trimEmphasis(t string) string {
	if strings.HasPrefix(t, "*") {
		s := strings.TrimLeft(t, "*")
		if r, _ := utf8.DecodeRuneInString(s); isWordRune(r) {
			t = s
		}
	}
	for _, mark := range []string{"**", "__"} {
		if s, ok := strings.CutSuffix(t, mark); ok && s != "" && !strings.HasSuffix(s, "/") && !strings.HasSuffix(s, ".") {
			t = s
		}
	}
	if s, ok := strings.CutSuffix(t, "*"); ok && s != "" && !strings.HasSuffix(s, "/") && !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "*") {
		t = s
	}
	return t
}

// trimLineRef drops a ":12", ":12:5" or "#L12", "#L12-L20" after a path.
func trimLineRef(t string) string {
	if i := strings.LastIndex(t, "#L"); i > 0 && strings.Trim(t[i+2:], "0123456789-L") == "" {
		return t[:i]
	}
	for {
		i := strings.LastIndexByte(t, ':')
		if i <= 0 || i == len(t)-1 || strings.Trim(t[i+1:], "0123456789") != "" {
			return t
		}
		t = t[:i]
	}
}

// pathChars reports whether t has only characters of file paths.
func pathChars(t string) bool {
	for _, r := range t {
		if !isWordRune(r) && !unicode.IsMark(r) && !strings.ContainsRune("._-/+~*@", r) {
			return false
		}
	}
	return true
}

// notAPath reports whether t is something else that looks like a path.
func notAPath(t string) bool {
	lower := strings.ToLower(t)
	switch {
	case notPaths[lower], strings.Contains(t, "//"), strings.HasPrefix(lower, "www."):
		return true
	case strings.HasPrefix(t, "@"), strings.Contains(t, "@") && !strings.Contains(t, "/"):
		return true // a mention, a team, an e-mail address
	case !strings.ContainsFunc(t, unicode.IsLetter):
		return true // a number, a date
	}
	return versionRE.MatchString(t)
}

// slashPath reports whether t, which has a '/', is a path.
func slashPath(t string) bool {
	if strings.HasPrefix(t, "/") && strings.Count(t, "/") == 1 {
		return false // a slash command, as in "/verify"
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(t, "/"), "/")
	if i := strings.LastIndexByte(first, '.'); i > 0 && domainTLDs[strings.ToLower(first[i+1:])] {
		return false // a host, as in github.com/owner/repo
	}
	return true
}

// defaultRulesYAML are the default file rules.
//
//go:embed contract_rules.yml
var defaultRulesYAML []byte

// defaultRules are the default file rules (the file is checked by a test: it
// cannot fail to parse).
var defaultRules = sync.OnceValue(func() []FileRule {
	list, err := parseFileRules(defaultRulesYAML)
	if err != nil {
		panic("rules/contract_rules.yml: " + err.Error())
	}
	return list
})

// defaultRuleSet is defaultRules, compiled.
var defaultRuleSet = sync.OnceValue(func() *ruleSet { return compileRuleSet(defaultRules()) })

// DefaultFileRules are the default file rules (rules/contract_rules.yml).
func DefaultFileRules() []FileRule {
	return cloneRules(defaultRules())
}

// FileRules are the file rules that apply under k: the default ones (unless
// DefaultRules is false), less those a rule of k's replaces (the same
// patterns, in any order), then k's own.
func (k ContractConfig) FileRules() []FileRule {
	if !k.DefaultRules {
		return cloneRules(k.Rules)
	}
	var out []FileRule
	for _, d := range defaultRules() {
		if !slices.ContainsFunc(k.Rules, func(r FileRule) bool { return samePatterns(r.Files, d.Files) }) {
			out = append(out, d)
		}
	}
	return cloneRules(append(out, k.Rules...))
}

func cloneRules(list []FileRule) []FileRule {
	out := make([]FileRule, len(list))
	for i, r := range list {
		r.Files, r.Critics = slices.Clone(r.Files), slices.Clone(r.Critics)
		out[i] = r
	}
	return out
}

// parseFileRules reads a file of file rules: a mapping with one key, rules.
func parseFileRules(data []byte) ([]FileRule, error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlError(err)
	}
	if len(file.Docs) != 1 || file.Docs[0].Body == nil {
		return nil, &ConfigError{Msg: "want one YAML document"}
	}
	body := file.Docs[0].Body
	var v struct {
		Rules []FileRule `yaml:"rules"`
	}
	if err := yaml.NodeToValue(body, &v, yaml.Strict()); err != nil {
		return nil, yamlError(err)
	}
	return fileRules(v.Rules, locator{body}, "rules")
}

// samePatterns reports whether two lists hold the same patterns, in any order.
func samePatterns(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// effectiveRules are the rules that apply under cfg (see FileRules),
// compiled (cached).
func effectiveRules(cfg ContractConfig) *ruleSet {
	if cfg.DefaultRules && len(cfg.Rules) == 0 {
		return defaultRuleSet()
	}
	key := ruleSetKey(cfg)
	if v, ok := ruleSetCache.Load(key); ok {
		return v.(*ruleSet)
	}
	rs := compileRuleSet(cfg.FileRules())
	if ruleSetCacheSize.Add(1) <= maxCacheEntries {
		ruleSetCache.Store(key, rs)
	}
	return rs
}

// ruleSetKey identifies the rules that apply under cfg.
func ruleSetKey(cfg ContractConfig) string {
	var b strings.Builder
	fmt.Fprint(&b, cfg.DefaultRules)
	for _, r := range cfg.Rules {
		fmt.Fprintf(&b, "|%q %v %q %q", r.Files, r.UnitTest, r.E2E, r.Critics)
	}
	return b.String()
}

// ruleSet is a list of file rules compiled for matching many paths: their
// patterns' alternatives (see globMatcher), indexed by the last two bytes of
// the text a path must end with, when they have one.
type ruleSet struct {
	rules     []FileRule
	bySuffix  map[string][]ruleAlt
	bySegment map[string][]int // "**/dir/**" patterns' dir -> their rules
	others    []ruleAlt
}

// ruleAlt is one alternative of one of a rule's patterns.
type ruleAlt struct {
	rule int
	globAlt
}

// suffixKey is the length of the index key of ruleSet.bySuffix.
const suffixKey = 2

func compileRuleSet(list []FileRule) *ruleSet {
	rs := &ruleSet{rules: list, bySuffix: map[string][]ruleAlt{}, bySegment: map[string][]int{}}
	for i, r := range list {
		for _, p := range r.Files {
			for _, a := range compileGlob(p) {
				if a.shape == shapeSegment {
					rs.bySegment[a.literal] = append(rs.bySegment[a.literal], i)
					continue
				}
				if len(a.suffix) < suffixKey {
					rs.others = append(rs.others, ruleAlt{i, a})
					continue
				}
				k := a.suffix[len(a.suffix)-suffixKey:]
				rs.bySuffix[k] = append(rs.bySuffix[k], ruleAlt{i, a})
			}
		}
	}
	return rs
}

// match sets matched[i] for each rule i that matches path (matched has a
// place for each rule).
func (rs *ruleSet) match(path string, matched []bool) {
	clear(matched)
	if len(rs.bySegment) > 0 {
		for rest := path; rest != ""; {
			seg, after, _ := strings.Cut(rest, "/")
			for _, i := range rs.bySegment[seg] {
				matched[i] = true
			}
			rest = after
		}
	}
	has := bigramsIn(path)
	if len(path) >= suffixKey {
		rs.matchAlts(rs.bySuffix[path[len(path)-suffixKey:]], path, has, matched)
	}
	rs.matchAlts(rs.others, path, has, matched)
}

func (rs *ruleSet) matchAlts(alts []ruleAlt, path string, has bigrams, matched []bool) {
	for i := range alts {
		if a := &alts[i]; !matched[a.rule] && has.holds(a.needs) && a.match(path) {
			matched[a.rule] = true
		}
	}
}

// bigrams is a set of pairs of adjacent bytes, hashed to 128 bits: a string
// that holds another holds its bigrams.
type bigrams [2]uint64

// bigramsIn are the bigrams of each of strs.
func bigramsIn(strs ...string) bigrams {
	var b bigrams
	for _, s := range strs {
		for i := 0; i+1 < len(s); i++ {
			h := (uint(s[i])*31 + uint(s[i+1])) & 127
			b[h>>6] |= 1 << (h & 63)
		}
	}
	return b
}

// holds reports whether b holds all of c.
func (b bigrams) holds(c bigrams) bool {
	return b[0]&c[0] == c[0] && b[1]&c[1] == c[1]
}

// globMatcher matches a doublestar pattern as doublestar.Match does, faster:
// its {alternatives} expanded, each with literal text a path must hold to
// match, checked first, and the commonest shapes matched without doublestar.
type globMatcher []globAlt

type globAlt struct {
	pattern string
	suffix  string  // the path must end with it
	literal string  // the path must contain it
	needs   bigrams // bigramsIn(suffix, literal)
	shape   globShape
}

// globShape is a pattern's shape, when a simple one.
type globShape int

const (
	shapeAny       globShape = iota // match with doublestar
	shapeLiteral                    // no wildcard: the path is the pattern
	shapeExtension                  // "**/*" + suffix: the path ends with suffix
	shapeBaseName                   // "**/" + suffix: the path is suffix or ends with "/" + suffix
	shapeSegment                    // "**/" + literal + "/**": one of the path's segments is literal
)

func (g globMatcher) match(path string) bool {
	for i := range g {
		if g[i].match(path) {
			return true
		}
	}
	return false
}

func (a *globAlt) match(path string) bool {
	switch a.shape {
	case shapeLiteral:
		return path == a.pattern
	case shapeExtension:
		return strings.HasSuffix(path, a.suffix)
	case shapeBaseName:
		return path == a.suffix || strings.HasSuffix(path, a.suffix) && path[len(path)-len(a.suffix)-1] == '/'
	case shapeSegment:
		return slices.Contains(strings.Split(path, "/"), a.literal)
	}
	return strings.HasSuffix(path, a.suffix) && strings.Contains(path, a.literal) && doublestar.MatchUnvalidated(a.pattern, path)
}

// maxGlobAlternatives bounds a pattern's expansion: past it, the pattern is
// matched as it is.
const maxGlobAlternatives = 256

// compileGlob compiles a pattern (cached).
func compileGlob(pattern string) globMatcher {
	if v, ok := globCache.Load(pattern); ok {
		return v.(globMatcher)
	}
	alts := expandBraces(pattern, maxGlobAlternatives)
	if alts == nil {
		alts = []string{pattern}
	}
	g := make(globMatcher, len(alts))
	for i, a := range alts {
		g[i] = globAlt{pattern: a}
		if !strings.ContainsAny(a, `\{}`) {
			g[i].suffix, g[i].literal = globLiterals(a)
			g[i].needs = bigramsIn(g[i].suffix, g[i].literal)
			g[i].shape = shapeOf(a, g[i].suffix, g[i].literal)
		}
	}
	if globCacheSize.Add(1) <= maxCacheEntries {
		globCache.Store(pattern, g)
	}
	return g
}

// shapeOf is the shape of a brace-less, escape-less pattern that ends with
// suffix and holds literal.
func shapeOf(p, suffix, literal string) globShape {
	switch {
	case literal != "" && p == "**/"+literal+"/**":
		return shapeSegment
	case p == suffix && !strings.ContainsAny(p, "*?[]"):
		return shapeLiteral
	case p == "**/*"+suffix:
		return shapeExtension
	case p == "**/"+suffix && suffix != "":
		return shapeBaseName
	}
	return shapeAny
}

// globLiterals returns the literal text a brace-less, escape-less pattern
// ends with (after its last '/' or wildcard), and its longest literal text
// within one path segment.
func globLiterals(p string) (suffix, literal string) {
	i := len(p)
	for i > 0 && !strings.ContainsRune("*?[]/", rune(p[i-1])) {
		i--
	}
	suffix = p[i:]
	run := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			if j := strings.IndexByte(p[i+1:], ']'); j >= 0 {
				i += j + 1
			}
			run = i + 1
		case '*', '?', ']', '/':
			run = i + 1
		default:
			if i+1-run > len(literal) {
				literal = p[run : i+1]
			}
		}
	}
	return suffix, literal
}

// expandBraces expands a pattern's {a,b} alternatives as doublestar reads
// them, nil if there would be more than limit.
func expandBraces(p string, limit int) []string {
	open := -1
	for i := 0; i < len(p) && open < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(p, i)
		case '{':
			open = i
		}
	}
	if open < 0 {
		return []string{p}
	}
	var parts []string
	depth, from := 0, open+1
	for i := open + 1; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(p, i)
		case '{':
			depth++
		case ',':
			if depth == 0 {
				parts = append(parts, p[from:i])
				from = i + 1
			}
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			parts = append(parts, p[from:i])
			var out []string
			for _, part := range parts {
				alts := expandBraces(p[:open]+part+p[i+1:], limit-len(out))
				if alts == nil {
					return nil
				}
				out = append(out, alts...)
				if len(out) > limit {
					return nil
				}
			}
			return out
		}
	}
	return nil // unclosed: invalid
}

// classEnd returns the index of the ']' that ends the character class
// opening at p[i], as doublestar finds it, or len(p).
func classEnd(p string, i int) int {
	for i++; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case ']':
			return i
		}
	}
	return len(p)
}
