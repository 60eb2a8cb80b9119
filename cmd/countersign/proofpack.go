package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign/app"
	"github.com/countersign/countersign/rules"
)

func init() { addCommand(newProofpack) }

const proofpackLong = `Prints the evidence that task owner/repo#N is done, or of how far it got, as
JSON (schema countersign.proofpack/v1): who built it, who approved and
verified it and when, with their notes; each criterion of its contract with
the run that decided it; rejections, failed attempts and a lead's overrides;
the task card's URL when it was read from GitHub.

With a store (--data, --redis-url, or COUNTERSIGN_DATA / REDIS_URL; the
embedded store's file is held by a running server: stop it first), the record
comes from the store, offline: no App settings are needed. Without one, or
when the store has no record of the task, it comes from the task card on
GitHub, believed only when its hidden record is signed with this server's
record key (--record-key, else derived from --webhook-secret); reading GitHub
needs the App's settings, as serve takes them. Standard error says where the
record came from. Exit 1 when there is no record to trust.`

// proofpackSettings are the settings proofpack takes: the store's, and the
// App's to read a task card on GitHub.
var proofpackSettings = []string{"COUNTERSIGN_DATA", "REDIS_URL", "GITHUB_APP_ID", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_PRIVATE_KEY",
	"GITHUB_WEBHOOK_SECRET", "COUNTERSIGN_RECORD_KEY", "COUNTERSIGN_RECORD_KEY_PREVIOUS", "GITHUB_API_URL"}

func newProofpack(c *cli) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proofpack owner/repo#N [flags]",
		Short: "print a task's evidence (builders, approvals, verification, criteria) as JSON",
		Long:  proofpackLong,
		Args:  cobra.ExactArgs(1),
	}
	table := app.SettingsTable()
	flags := addSettingFlags(cmd.Flags(), table, func(s app.Setting) bool { return slices.Contains(proofpackSettings, s.Env) })
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		repo, n, err := parseTaskRef(args[0])
		if err != nil {
			return err
		}
		values := settingValues(c, cmd.Flags(), table, flags)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ref := fmt.Sprintf("%s#%d", repo, n)
		if cmd.Flags().Changed("data") || cmd.Flags().Changed("redis-url") || c.getenv("COUNTERSIGN_DATA") != "" || c.getenv("REDIS_URL") != "" {
			ev, found, where, err := proofpackFromStore(ctx, values, repo, n)
			if err != nil {
				return failed(err)
			}
			if found {
				fmt.Fprintf(c.stderr, "countersign proofpack: the record of %s comes from the store (%s)\n", ref, where)
				return printEvidence(c, ev)
			}
			fmt.Fprintf(c.stderr, "countersign proofpack: the store (%s) has no record of %s; reading its task card on GitHub\n", where, ref)
		}
		st, err := app.ResolveSettings(values)
		if err != nil {
			return usageErrorf("reading %s's task card on GitHub needs the App's settings: %v", ref, err)
		}
		ev, err := app.Proofpack(ctx, st, nil, repo, n)
		if err != nil {
			return failed(err)
		}
		fmt.Fprintf(c.stderr, "countersign proofpack: the record of %s comes from its task card on GitHub (%s), signed with this server's record key\n", ref, ev.Card)
		return printEvidence(c, ev)
	}
	return cmd
}

// proofpackFromStore reads task repo#n's evidence from the store the
// settings name (values, by variable), and says which store it is.
func proofpackFromStore(ctx context.Context, values map[string]string, repo string, n int) (rules.Evidence, bool, string, error) {
	st := app.Settings{RedisURL: strings.TrimSpace(values["REDIS_URL"]), DataPath: strings.TrimSpace(values["COUNTERSIGN_DATA"])}
	where := st.DataPath
	if st.RedisURL != "" {
		where = "Redis at " + app.RedactURL(st.RedisURL)
	}
	s, err := app.OpenExistingStore(ctx, st)
	if err != nil {
		return rules.Evidence{}, false, where, err
	}
	defer s.Close()
	ev, found, err := app.ProofpackFromStore(ctx, s, repo, n)
	return ev, found, where, err
}

// printEvidence writes ev as indented JSON.
func printEvidence(c *cli, ev rules.Evidence) error {
	out := json.NewEncoder(c.stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(ev); err != nil {
		return failed(err)
	}
	return nil
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
