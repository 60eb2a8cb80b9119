package main

import (
	"context"
	"fmt"
	"github.com/countersign/countersign/app/lazylog"
	"log/slog"
	"net"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store/redisstore"
)

func init() { addCommand(newServe) }

func newServe(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "run the GitHub App (webhook server and workers)",
		Long: `Runs countersign: POST /webhook, /healthz, /readyz, /metrics, and the workers.
Every flag mirrors an environment variable, and a flag wins over its variable.
Every missing or invalid setting is named at start, one line each, and
nothing starts.`,
		Args: cobra.NoArgs,
	}
	table := app.SettingsTable()
	flags := addSettingFlags(cmd.Flags(), table, nil)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		values := settingValues(c, cmd.Flags(), table, flags)
		st, err := app.ResolveSettings(values)
		if err != nil {
			// Every bad or missing setting, one line each.
			for line := range strings.SplitSeq(err.Error(), "\n") {
				fmt.Fprintf(c.stderr, "%s: %s\n", cmd.CommandPath(), line)
			}
			return &exitError{code: 2}
		}
		return serve(c, st)
	}
	return cmd
}

// settingValues is each setting's value: its flag when given (the command
// has it), else its environment variable when set, else its default.
func settingValues(c *cli, fs *pflag.FlagSet, table []app.Setting, flags map[string]*string) map[string]string {
	values := make(map[string]string, len(table))
	for _, s := range table {
		switch {
		case flags[s.Env] != nil && fs.Changed(s.Flag):
			values[s.Env] = *flags[s.Env]
		case c.getenv(s.Env) != "":
			values[s.Env] = c.getenv(s.Env)
		default:
			values[s.Env] = s.Default
		}
	}
	return values
}

func serve(c *cli, st app.Settings) error {
	// Attributes added per delivery are formatted only if it logs.
	log := slog.New(lazylog.Handler(slog.NewJSONHandler(c.stderr, &slog.HandlerOptions{Level: st.LogLevel})))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	s, err := app.OpenStore(openCtx, st)
	cancel()
	if err != nil {
		return failed(err)
	}
	// From now on go-redis's own lines go to the log, rate-limited (a store
	// that cannot be opened is reported in one line above).
	redisstore.SetLogger(log, 10*time.Second)
	srv, err := app.New(st, s, log)
	if err != nil {
		s.Close()
		return failed(err)
	}
	ln, err := net.Listen("tcp", st.Listen)
	if err != nil {
		s.Close()
		return failed(fmt.Errorf("COUNTERSIGN_LISTEN (--listen): %w", err))
	}
	if err := srv.Run(ctx, ln); err != nil {
		log.Error("server stopped", "error", err)
		return &exitError{code: 1}
	}
	return nil
}
