package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/rules"
)

func init() { addCommand(newContract) }

const contractLong = `Writes the verification contract countersign gives a task (docs/design.md): its
type and why, the files its body names, and each criterion with the CI checks
(or the critic's reviewers) that count for it. -files are the files its pull
requests change. FILE "-" is the standard input. Without -config, the built-in
defaults apply: no contracts.checks, so one "ci" criterion stands for
typecheck, lint, unit tests and end-to-end tests now, met when every check run
and status on the head from a trusted source has passed. With -config, that
.github/countersign.yml applies.
The exit code is 1 if a file cannot be read or the configuration is invalid.`

// contractStdin is where "-" reads from (a variable for the tests).
var contractStdin io.Reader = os.Stdin

// contractFlags are the contract subcommand's flags.
type contractFlags struct {
	title, body, bodyFile, files, filesFrom, config, typ string
	json                                                 bool
}

func newContract(c *cli) *cobra.Command {
	var f contractFlags
	cmd := &cobra.Command{
		Use:   "contract -title TITLE [-body TEXT | -body-file FILE] [-files A,B | -files-from FILE] [-config FILE] [-type verifiable|advisory|skip] [-json]",
		Short: "write the verification contract of an issue (-h: the flags)",
		Long:  contractLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if msg := f.usageError(args); msg != "" {
				return usageErrorf("%s (try: countersign contract -h)", msg)
			}
			return exitCode(contract(f, c.stdout, c.stderr))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.title, "title", "", "the issue's title")
	fs.StringVar(&f.body, "body", "", "the issue's body (Markdown)")
	fs.StringVar(&f.bodyFile, "body-file", "", "read the issue's body from this file (- for stdin)")
	fs.StringVar(&f.files, "files", "", "the files the pull requests change, comma-separated")
	fs.StringVar(&f.filesFrom, "files-from", "", "read the changed files from this file, one a line (- for stdin)")
	fs.StringVar(&f.config, "config", "", "a .github/countersign.yml to use (default: the built-in defaults)")
	fs.StringVar(&f.typ, "type", "", "force the type, as a lead's /contract does: verifiable, advisory or skip")
	fs.BoolVar(&f.json, "json", false, "print the contract as JSON")
	return cmd
}

func contract(f contractFlags, stdout, stderr io.Writer) int {
	cfg, in, err := f.load()
	if err != nil {
		fmt.Fprintf(stderr, "countersign contract: %v\n", err)
		return 1
	}
	c := rules.GenerateContract(cfg.Contracts, in)
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(c); err != nil {
			fmt.Fprintf(stderr, "countersign contract: %v\n", err)
			return 1
		}
		return 0
	}
	writeContract(stdout, cfg, c)
	return 0
}

// usageError says what is wrong with the flags and arguments, or "".
func (f contractFlags) usageError(args []string) string {
	switch {
	case len(args) > 0:
		return fmt.Sprintf("unexpected argument %q", args[0])
	case strings.TrimSpace(f.title) == "":
		return "-title is required: the issue's title decides the contract's type"
	case f.body != "" && f.bodyFile != "":
		return "give -body or -body-file, not both"
	case f.bodyFile == "-" && f.filesFrom == "-":
		return "-body-file and -files-from cannot both read the standard input"
	}
	switch rules.ContractType(f.typ) {
	case "", rules.Verifiable, rules.Advisory, rules.Skip:
		return ""
	}
	return fmt.Sprintf("-type must be verifiable, advisory or skip, not %q", f.typ)
}

// load reads the configuration and the contract's input the flags name.
func (f contractFlags) load() (rules.Config, rules.ContractInput, error) {
	cfg := rules.DefaultConfig()
	if f.config != "" {
		data, err := os.ReadFile(f.config)
		if err != nil {
			return cfg, rules.ContractInput{}, fmt.Errorf("-config: %w", err)
		}
		if cfg, err = rules.ParseConfig(data); err != nil {
			return cfg, rules.ContractInput{}, configError(f.config, err)
		}
	}
	in := rules.ContractInput{Title: f.title, Body: f.body, Type: rules.ContractType(f.typ), At: time.Now().UTC().Truncate(time.Second)}
	if f.bodyFile != "" {
		data, err := readInput(f.bodyFile)
		if err != nil {
			return cfg, in, fmt.Errorf("-body-file: %w", err)
		}
		in.Body = string(data)
	}
	for p := range strings.SplitSeq(f.files, ",") {
		if p = strings.TrimSpace(p); p != "" {
			in.Changed = append(in.Changed, p)
		}
	}
	if f.filesFrom != "" {
		data, err := readInput(f.filesFrom)
		if err != nil {
			return cfg, in, fmt.Errorf("-files-from: %w", err)
		}
		for line := range strings.Lines(string(data)) {
			if p := strings.TrimSpace(line); p != "" {
				in.Changed = append(in.Changed, p)
			}
		}
	}
	return cfg, in, nil
}

// readInput reads a file, or the standard input for "-".
func readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(contractStdin)
	}
	return os.ReadFile(path)
}

// configError places each configuration mistake in the file it is in, one
// a line.
func configError(path string, err error) error {
	return errors.New(strings.Join(problemLines(path, err), "\n"))
}

// writeContract writes c as a checklist.
func writeContract(w io.Writer, cfg rules.Config, c rules.Contract) {
	fmt.Fprintf(w, "type: %s (%s)\n", c.Type, c.Why)
	if len(c.Expected) == 0 {
		fmt.Fprintln(w, "expected files: none named in the body")
	} else {
		fmt.Fprintf(w, "expected files: %s\n", strings.Join(c.Expected, ", "))
	}
	if len(c.Criteria) == 0 {
		fmt.Fprintln(w, "criteria: none: a lead reviews the work, and /verify is theirs")
		return
	}
	fmt.Fprintln(w, "criteria:")
	for _, k := range c.Criteria {
		fmt.Fprintf(w, "- [ ] %s — %s\n", k.Key(), k.Description)
		fmt.Fprintf(w, "      %s\n", countsFor(cfg, k))
	}
}

// countsFor says what meets criterion k under cfg.
func countsFor(cfg rules.Config, k rules.Criterion) string {
	switch {
	case k.Activity == rules.ActCritic:
		reviewers := cfg.Contracts.Critics[k.Critic]
		if len(reviewers) == 0 {
			return "reviewers: any counted approval"
		}
		at := make([]string, len(reviewers))
		for i, r := range reviewers {
			at[i] = "@" + strings.TrimPrefix(r, "@")
		}
		return "reviewers: " + strings.Join(at, ", ")
	case k.Activity == rules.ActE2E && k.Timing == rules.TimingDeferred:
		if ic := cfg.Goals.IntegrationCheck; ic != "" {
			return fmt.Sprintf("checked with the goal: %s on the default branch", ic)
		}
		return "checked with the goal: no goals.integration_check configured"
	}
	if k.Activity == rules.ActCI || cfg.Contracts.WholeCI() && slices.Contains(rules.CheckedActivities, k.Activity) {
		return "checks: every check run and status on the head from a trusted source (contracts.checks unset)"
	}
	if checks := cfg.Contracts.Checks[k.Activity]; len(checks) > 0 {
		return "checks: " + strings.Join(checks, ", ")
	}
	return "no check mapped: the verifier checks it"
}
