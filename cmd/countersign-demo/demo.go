// Command countersign-demo plays workflow scenarios against a fake GitHub and
// a real countersign bot, both in this process:
//
//	go run ./cmd/countersign-demo              # the simple three-person workflow, then its escalation
//	go run ./cmd/countersign-demo -list        # the built-in scenarios
//	go run ./cmd/countersign-demo -v NAME|FILE # one of them, or a .scenario file, with the bot's logs
//	go run ./cmd/countersign-demo merge-queue  # GitHub's merge queue and the gate's other answers
//
// It is a binary of its own so that the fake GitHub and the story player
// (internal/githubtest, internal/scenario) stay out of the countersign binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/internal/mcpdemo"
	"github.com/countersign/countersign/internal/scenario"
	"github.com/countersign/countersign/internal/scenarios"
)

// defaultDemo is the scenario listed as the default; without an argument
// countersign-demo plays defaultDemos: the simple three-person workflow, then its
// two-rejection escalation. The rest (the merge queue among them) are played
// by name: the default stays short.
const defaultDemo = "simple"

var defaultDemos = []string{defaultDemo, "escalation"}

const demoLong = `A scenario is a workflow story (people, issues, PRs, reviews, /verify ...)
played against a fake GitHub and a real countersign bot, both in this
process, with every expectation in it checked. NAME is a built-in scenario
(without one: %q, then "escalation"; "merge-queue" shows GitHub's merge
queue); FILE is a .scenario file (format: internal/scenarios/README.md).
-list lists the built-in scenarios.
The exit code is 1 if an expectation is not met.`

// run plays what args ask for and returns the exit code. Flags may come
// before or after the scenario, spelled -name or --name.
func run(args []string, stdout, stderr io.Writer) int {
	var list, verbose bool
	flags := flag.NewFlagSet(program, flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.BoolVar(&list, "list", false, "list the built-in scenarios")
	flags.BoolVar(&verbose, "v", false, "write the bot's logs (JSON) to stderr")
	flags.BoolVar(&verbose, "verbose", false, "the same as -v")
	flags.Usage = func() {
		fmt.Fprintf(flags.Output(), "Usage: %s [-v] [NAME | FILE]\n\n%s\n\nFlags:\n", program, fmt.Sprintf(demoLong, defaultDemo))
		flags.PrintDefaults()
	}
	var rest []string
	for {
		if err := flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				flags.SetOutput(stdout)
				flags.Usage()
				return 0
			}
			return 2
		}
		if flags.NArg() == 0 {
			break
		}
		rest = append(rest, flags.Arg(0))
		args = flags.Args()[1:]
	}
	if len(rest) > 1 || (list && len(rest) > 0) {
		fmt.Fprintf(stderr, "%s: give one scenario, or -list alone (try: %s -h)\n", program, program)
		return 2
	}
	if list {
		return demoList(stdout, stderr)
	}
	return demo(rest, verbose, stdout, stderr)
}

// demo plays the scenarios args name (without one: the default ones).
func demo(args []string, verbose bool, stdout, stderr io.Writer) int {
	names := defaultDemos
	if len(args) == 1 {
		names = args
	}
	var plays []func(ctx context.Context, logs io.Writer) int
	for _, name := range names {
		if name == mcpDemo {
			plays = append(plays, func(ctx context.Context, logs io.Writer) int {
				if err := mcpdemo.Play(ctx, stdout, logs != nil); err != nil {
					fmt.Fprintf(stderr, "\n%s: %v\n", program, err)
					return 1
				}
				return 0
			})
			continue
		}
		sc, err := loadScenario(name)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", program, err)
			return 2
		}
		plays = append(plays, func(ctx context.Context, logs io.Writer) int { return playOne(ctx, sc, logs, stdout, stderr) })
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var logs io.Writer
	if verbose {
		logs = stderr
	}
	for i, play := range plays {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		// Each scenario on a fresh repository and bot: issue numbers start at 1.
		if code := play(ctx, logs); code != 0 {
			return code
		}
	}
	return 0
}

// mcpDemo names the flow in which three agents work only through countersign's
// MCP tools (internal/mcpdemo), rather than a scenario file.
const mcpDemo = "agents-mcp"

// program names this command in its messages.
const program = "countersign-demo"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func playOne(ctx context.Context, sc *scenario.Scenario, logs, stdout, stderr io.Writer) int {
	rig, err := scenario.NewRig(ctx, scenario.RigOptions{LogWriter: logs})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", program, err)
		return 1
	}
	defer rig.Close()
	if err := sc.Play(ctx, rig, stdout); err != nil {
		fmt.Fprintf(stderr, "\n%s: %v\n", program, err)
		return 1
	}
	return 0
}

// loadScenario reads a scenario file (a path, or a name ending in
// .scenario that exists on disk) or a built-in scenario by name.
func loadScenario(arg string) (*scenario.Scenario, error) {
	pathLike := strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator)
	if pathLike || strings.HasSuffix(arg, ".scenario") {
		f, err := os.Open(arg)
		if err == nil {
			defer f.Close()
			return scenario.Parse(arg, f)
		}
		if pathLike || !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	file := strings.TrimSuffix(arg, ".scenario") + ".scenario"
	if _, err := fs.Stat(scenarios.Files, file); err != nil {
		return nil, fmt.Errorf("no scenario %q (see countersign-demo -list, or give a .scenario file)", arg)
	}
	return scenario.ParseFile(scenarios.Files, file)
}

// demoNames lists the built-in scenarios: the workflow examples first, then
// the attacks, each group by name.
func demoNames() []string {
	files, _ := fs.Glob(scenarios.Files, "*.scenario")
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f, ".scenario"))
	}
	sort.Slice(names, func(i, j int) bool {
		ai, aj := strings.HasPrefix(names[i], "attack-"), strings.HasPrefix(names[j], "attack-")
		if ai != aj {
			return aj
		}
		return names[i] < names[j]
	})
	return names
}

func demoList(stdout, stderr io.Writer) int {
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "Built-in scenarios (play one with: countersign-demo NAME):")
	code := 0
	for _, name := range demoNames() {
		sc, err := scenario.ParseFile(scenarios.Files, name+".scenario")
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", program, err)
			code = 1
			continue
		}
		title := sc.Title
		if name == defaultDemo {
			title += " (default)"
		}
		fmt.Fprintf(w, "  %s\t%s\n", name, title)
	}
	fmt.Fprintf(w, "  %s\t%s\n", mcpDemo, "Three AI agents work through countersign's MCP tools only (countersign mcp)")
	w.Flush()
	return code
}
