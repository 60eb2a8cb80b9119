package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/app/store"
)

func init() { addCommand(newProofpack) }

const proofpackLong = `Prints the evidence that task owner/repo#N is done, or of how far it got, as
JSON (schema countersign.proofpack/v1): who built it,
who approved and verified it and when, with their notes; each criterion of its
contract with the run that decided it; rejections, failed attempts and a
lead's overrides; the task card's URL.

The record comes from the store when one is named (--data, --redis-url, or
COUNTERSIGN_DATA / REDIS_URL; the embedded store's file is held by a running
server: stop it first), else from the task card on GitHub, believed only when
its hidden record is signed with this server's record key
(COUNTERSIGN_RECORD_KEY, else derived from GITHUB_WEBHOOK_SECRET). Reading
GitHub needs the App's settings, as serve takes them. Exit 1 when there is no
record to trust.`

func newProofpack(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proofpack owner/repo#N [flags]",
		Short: "print a task's evidence (builders, approvals, verification, criteria) as JSON",
		Long:  proofpackLong,
		Args:  cobra.ExactArgs(1),
	}
	table := app.SettingsTable()
	flags := make(map[string]*string, len(table))
	for _, s := range table {
		flags[s.Env] = cmd.Flags().String(s.Flag, s.Default, s.Help+" ["+s.Env+"]")
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		repo, n, err := parseTaskRef(args[0])
		if err != nil {
			return err
		}
		values := settingValues(c, cmd.Flags(), table, flags)
		withStore := cmd.Flags().Changed("data") || cmd.Flags().Changed("redis-url") ||
			c.getenv("COUNTERSIGN_DATA") != "" || c.getenv("REDIS_URL") != ""
		if !withStore {
			values["REDIS_URL"] = "" // no store asked for: none is opened (nor created)
		}
		st, err := app.ResolveSettings(values)
		if err != nil {
			return usageErrorf("%v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var s store.Store
		if withStore {
			if s, err = app.OpenExistingStore(ctx, st); err != nil {
				return failed(err)
			}
			defer s.Close()
		}
		ev, err := app.Proofpack(ctx, st, s, repo, n)
		if err != nil {
			return failed(err)
		}
		out := json.NewEncoder(c.stdout)
		out.SetIndent("", "  ")
		if err := out.Encode(ev); err != nil {
			return failed(err)
		}
		return nil
	}
	return cmd
}

// parseTaskRef reads "owner/repo#N".
func parseTaskRef(ref string) (string, int, error) {
	repo, num, ok := strings.Cut(ref, "#")
	owner, name, ok2 := strings.Cut(repo, "/")
	n, err := strconv.Atoi(num)
	if !ok || !ok2 || owner == "" || name == "" || strings.Contains(name, "/") || err != nil || n <= 0 {
		return "", 0, usageErrorf("%q is not owner/repo#N", ref)
	}
	return repo, n, nil
}
