// Command countersign is the countersign GitHub App: `countersign serve` runs
// it; the other subcommands help operate it.
//
// Each subcommand lives in its own file and adds itself to the command tree
// with addCommand in an init function; main.go only builds the tree and turns
// errors into exit codes (0 done, 1 failed, 2 bad usage).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/countersign/countersign/app/buildinfo"
)

// cli is what every subcommand gets: where to write and how to read the
// environment (a function, so the tests can give their own).
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// envOr is the environment variable env, or def when it is unset or blank.
func (c *cli) envOr(env, def string) string {
	if v := strings.TrimSpace(c.getenv(env)); v != "" {
		return v
	}
	return def
}

// commands are the subcommand constructors, added by each subcommand's file.
var commands []func(*cli) *cobra.Command

// addCommand adds a subcommand to countersign; call it from an init function.
func addCommand(newCmd func(*cli) *cobra.Command) {
	commands = append(commands, newCmd)
}

// exitError ends the command with code after its message was already written
// (an empty message: nothing more to say).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// failed ends the command with exit code 1 and the message "countersign CMD: ERR".
func failed(err error) error { return &exitError{code: 1, msg: err.Error()} }

// usageErrorf ends the command with exit code 2 and a message.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: 2, msg: fmt.Sprintf(format, args...)}
}

// exitCode turns a code returned by a command's own printing into an error.
func exitCode(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

const rootLong = `countersign — nothing is done until someone else confirms it.

countersign is a GitHub App: "serve" runs it, the other commands help set it up
and operate it. Every flag can come before or after the arguments, and every
command answers -h (--help). The settings of serve (environment variables,
each mirrored by a flag) are listed by: countersign serve -h`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs countersign with args and returns its exit code.
func run(args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := newRoot(c)
	root.SetArgs(normalizeArgs(root, args))
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	name := "countersign"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "%s: %s\n", name, ee.msg)
		}
		return ee.code
	}
	// cobra's own errors: unknown commands, bad flags, wrong argument counts.
	fmt.Fprintf(stderr, "%s: %s\n", name, flagMessage(err))
	if cmd != nil {
		fmt.Fprint(stderr, "\n", cmd.UsageString())
	}
	return 2
}

// newRoot builds the command tree.
func newRoot(c *cli) *cobra.Command {
	root := &cobra.Command{
		Use:           "countersign",
		Short:         "nothing is done until someone else confirms it",
		Long:          rootLong,
		Version:       buildinfo.Read().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				msg := fmt.Sprintf("unknown command %q (try: countersign help)", args[0])
				if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
					msg += "\n\nDid you mean this?\n\t" + strings.Join(near, "\n\t")
				}
				return usageErrorf("%s", msg)
			}
			cmd.SetOut(c.stderr)
			cmd.Help()
			return &exitError{code: 2}
		},
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("{{.Version}}\n") // as `countersign version` prints it
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return err })
	subs := make([]*cobra.Command, 0, len(commands))
	for _, newCmd := range commands {
		subs = append(subs, newCmd(c))
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	root.AddCommand(subs...)
	return root
}

// flagMessage words cobra's flag errors as Go's flag package does, which the
// single-dash spelling of flags (-list, -title) suggests.
func flagMessage(err error) string {
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		name := ne.GetSpecifiedName()
		if s := ne.GetSpecifiedShortnames(); s != "" {
			name = s
		}
		return "flag provided but not defined: -" + name
	}
	return err.Error()
}

// normalizeArgs lets flags be spelled -name as well as --name, as with Go's
// flag package (countersign demo -list, countersign contract -title X): a
// single-dash word longer than one letter becomes a double-dash one, unless it
// is the value of a flag before it. There are no combined one-letter flags.
func normalizeArgs(root *cobra.Command, args []string) []string {
	takesValue := map[string]bool{}
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		visit := func(f *pflag.Flag) {
			takes := f.NoOptDefVal == ""
			takesValue[f.Name] = takesValue[f.Name] || takes
			if f.Shorthand != "" {
				takesValue[f.Shorthand] = takesValue[f.Shorthand] || takes
			}
		}
		cmd.LocalFlags().VisitAll(visit)
		cmd.PersistentFlags().VisitAll(visit)
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	takesValue["help"], takesValue["h"] = false, false

	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && !isNumber(a[1:]) {
			a = "-" + a
		}
		out = append(out, a)
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(name, "=") && takesValue[name] && i+1 < len(args) {
			i++
			out = append(out, args[i]) // the flag's value, as it is
		} else if len(a) == 2 && a[0] == '-' && takesValue[a[1:]] && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

func isNumber(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return s != ""
}
