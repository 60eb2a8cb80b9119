package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/rules"
)

func init() { addCommand(newConfig) }

const configLong = `Checks a repository's .github/countersign.yml with the parser the bot uses,
or prints the file's JSON Schema (rules/countersign.schema.json) for editors.`

const configCheckLong = `Checks FILE ("-": the standard input) as countersign does when it reads
.github/countersign.yml: it prints "FILE: valid", or every mistake, one a
line, as FILE:LINE:COLUMN: message (the message starts with the key's path,
e.g. contracts.rules[2].files, and suggests the key or value you may have
meant): the verdict the countersign/config check run gives.
The exit code is 0 when the file is valid, 1 when it is invalid or cannot be
read, 2 on a usage error.`

// configStdin is where "config check -" reads from (a variable for the tests).
var configStdin io.Reader = os.Stdin

func newConfig(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config check FILE | schema",
		Short: "check a .github/countersign.yml as the bot would, or print its JSON Schema",
		Long:  configLong,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown subcommand %q: check or schema (usage: countersign config -h)", args[0])
			}
			return usageErrorf("check or schema? (usage: countersign config -h)")
		},
	}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "check a .github/countersign.yml as the bot would (exit 1 if invalid)",
		Long:  configCheckLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitCode(configCheck(args[0], c.stdout, c.stderr))
		},
	}
	schema := &cobra.Command{
		Use:   "schema",
		Short: "print the configuration file's JSON Schema",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := c.stdout.Write(rules.ConfigSchema()); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	cmd.AddCommand(check, schema)
	return cmd
}

// configCheck checks the configuration file name and returns the exit code.
func configCheck(name string, stdout, stderr io.Writer) int {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(configStdin, 1<<20+1))
		name = "<stdin>"
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "countersign config check: %v\n", err)
		return 1
	}
	if _, err := rules.ParseConfig(data); err != nil {
		for _, line := range problemLines(name, err) {
			fmt.Fprintln(stdout, line)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid\n", name)
	return 0
}

// problemLines places each mistake ParseConfig reported in file name:
// "name:LINE:COLUMN: message", one a line, in the file's order.
func problemLines(name string, err error) []string {
	problems := rules.Problems(err)
	if len(problems) == 0 {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	out := make([]string, len(problems))
	for i, ce := range problems {
		switch {
		case ce.Line > 0 && ce.Column > 0:
			out[i] = fmt.Sprintf("%s:%d:%d: %s", name, ce.Line, ce.Column, ce.Msg)
		case ce.Line > 0:
			out[i] = fmt.Sprintf("%s:%d: %s", name, ce.Line, ce.Msg)
		default:
			out[i] = fmt.Sprintf("%s: %s", name, ce.Msg)
		}
	}
	return out
}
