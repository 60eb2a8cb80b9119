package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/countersign/countersign/rules"
)

const configUsage = `usage:
  countersign config check FILE   check a .github/countersign.yml as the bot would (FILE "-": stdin)
  countersign config schema       print the file's JSON Schema (rules/countersign.schema.json)

check prints "FILE: valid", or the problem as FILE:LINE:COLUMN: message, the
verdict the countersign/config check run gives. The exit code is 0 when the
file is valid, 1 when it is invalid or cannot be read, 2 on a usage error.
`

// configStdin is where "config check -" reads from (a variable for the tests).
var configStdin io.Reader = os.Stdin

func config(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 2 && args[0] == "check":
		return configCheck(args[1], stdout, stderr)
	case len(args) == 1 && args[0] == "schema":
		_, err := stdout.Write(rules.ConfigSchema())
		if err != nil {
			fmt.Fprintf(stderr, "countersign config schema: %v\n", err)
			return 1
		}
		return 0
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help"):
		fmt.Fprint(stdout, configUsage)
		return 0
	}
	fmt.Fprint(stderr, configUsage)
	return 2
}

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
		var ce *rules.ConfigError
		switch {
		case !errors.As(err, &ce):
			fmt.Fprintf(stdout, "%s: %v\n", name, err)
		case ce.Line > 0 && ce.Column > 0:
			fmt.Fprintf(stdout, "%s:%d:%d: %s\n", name, ce.Line, ce.Column, ce.Msg)
		case ce.Line > 0:
			fmt.Fprintf(stdout, "%s:%d: %s\n", name, ce.Line, ce.Msg)
		default:
			fmt.Fprintf(stdout, "%s: %s\n", name, ce.Msg)
		}
		return 1
	}
	fmt.Fprintf(stdout, "%s: valid\n", name)
	return 0
}
