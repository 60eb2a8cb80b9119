package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store"
)

func init() { addCommand(newDeadletters) }

const deadlettersLong = `Dead letters are deliveries that failed every processing attempt. "retry" puts
them back at the end of their task's queue; a running countersign picks them up.
With the embedded store (COUNTERSIGN_DATA) the file is held by the running server:
stop it first. With Redis this works while the servers run. Neither command
creates a store: a path that holds none is an error.`

// storeFlags are the flags that name the store, for the commands that work on
// the store alone.
type storeFlags struct {
	data, redisURL string
}

// add adds --data and --redis-url to cmd (persistent: its subcommands take
// them too, before or after their arguments).
func (f *storeFlags) add(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&f.data, "data", "", `embedded store file [COUNTERSIGN_DATA] (default "countersign.db")`)
	cmd.PersistentFlags().StringVar(&f.redisURL, "redis-url", "", "Redis URL, when Redis is the store [REDIS_URL]")
}

// open opens the existing store the flags (else the environment) name.
func (f *storeFlags) open(ctx context.Context, c *cli, cmd *cobra.Command) (store.Store, error) {
	data, redisURL := f.data, f.redisURL
	if !cmd.Flags().Changed("data") {
		data = c.envOr("COUNTERSIGN_DATA", "countersign.db")
	}
	if !cmd.Flags().Changed("redis-url") {
		redisURL = c.envOr("REDIS_URL", "")
	}
	if cmd.Flags().Changed("data") && !cmd.Flags().Changed("redis-url") {
		redisURL = "" // --data names the embedded store even when REDIS_URL is set
	}
	st, err := app.StoreSettings(data, redisURL)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	s, err := app.OpenExistingStore(ctx, st)
	if err != nil {
		return nil, failed(err)
	}
	return s, nil
}

func newDeadletters(c *cli) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "deadletters list|retry [flags]",
		Short: "list or requeue deliveries that failed every attempt",
		Long:  deadlettersLong,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown subcommand %q: list or retry (usage: countersign deadletters -h)", args[0])
			}
			return usageErrorf("list or retry? (usage: countersign deadletters -h)")
		},
	}
	sf.add(cmd)

	list := &cobra.Command{
		Use:   "list [--data FILE | --redis-url URL]",
		Short: "list the dead letters: id, event, key, received, attempts, last error",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := sf.open(ctx, c, cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			dead, err := s.DeadLetters(ctx)
			if err != nil {
				return failed(err)
			}
			if len(dead) == 0 {
				fmt.Fprintln(c.stdout, "no dead letters")
				return nil
			}
			w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tEVENT\tKEY\tRECEIVED\tATTEMPTS\tLAST ERROR")
			for _, d := range dead {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", d.ID, d.Event, d.Key, d.ReceivedAt.UTC().Format(time.RFC3339), d.Attempts, d.LastError)
			}
			return w.Flush()
		},
	}

	var all bool
	retry := &cobra.Command{
		Use:   "retry ID... | --all",
		Short: "put dead letters back at the end of their task's queue",
		RunE: func(cmd *cobra.Command, ids []string) error {
			if all == (len(ids) > 0) {
				return usageErrorf("give dead letter ids or --all, not both or neither")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := sf.open(ctx, c, cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			if all {
				dead, err := s.DeadLetters(ctx)
				if err != nil {
					return failed(err)
				}
				for _, d := range dead {
					ids = append(ids, d.ID)
				}
			}
			code := 0
			for _, id := range ids {
				if err := s.RetryDeadLetter(ctx, id); err != nil {
					fmt.Fprintf(c.stderr, "countersign deadletters retry: %s: %v\n", id, err)
					code = 1
					continue
				}
				fmt.Fprintf(c.stdout, "requeued %s\n", id)
			}
			return exitCode(code)
		},
	}
	retry.Flags().BoolVar(&all, "all", false, "requeue every dead letter")
	cmd.AddCommand(list, retry)
	return cmd
}
