package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/app/register"
)

func init() { addCommand(newRegister) }

const registerLong = `Registers countersign as a GitHub App with GitHub's App manifest flow:
it serves a page on this machine whose button posts app.yml (with your webhook
URL) to GitHub; you confirm there, GitHub sends you back, and countersign
exchanges the code for the App's id, private key and webhook secret and writes
them to DIR (each file 0600): app-id, private-key.pem, webhook-secret. DIR is
by default outside any checkout, under your configuration directory:
countersign/APP-NAME in $XDG_CONFIG_HOME (else ~/.config) on Linux,
~/Library/Application Support on macOS. It then prints the command that runs
countersign with them.

It warns (and goes on) when GitHub could not reach the webhook URL: a loopback,
private or link-local address, a name that resolves only inside a network
(.local, .internal, ...), plain http, or a path other than /webhook.

On a machine GitHub cannot reach (a laptop), give --webhook-proxy with a
smee.io channel instead of --webhook-url (open https://smee.io/new to make
one): the App delivers its webhooks to the channel, and
"countersign serve --webhook-proxy" with the same URL receives them.

For GitHub Enterprise Server set --github-url https://HOST (GITHUB_URL); the
API is then https://HOST/api/v3/ unless --github-api-url says otherwise.`

func newRegister(c *cli) *cobra.Command {
	var opts register.Options
	var manifest, proxyURL string
	cmd := &cobra.Command{
		Use:   "register --webhook-url https://HOST/webhook [flags]",
		Short: "create the GitHub App from app.yml (GitHub's manifest flow) and save its secrets",
		Long:  registerLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("github-url") {
				opts.GitHubURL = c.envOr("GITHUB_URL", "https://github.com")
			}
			if !cmd.Flags().Changed("github-api-url") {
				opts.APIURL = c.envOr("GITHUB_API_URL", "")
			}
			opts.Manifest = countersign.AppManifest
			if manifest != "" {
				b, err := os.ReadFile(manifest)
				if err != nil {
					return failed(fmt.Errorf("--manifest: %w", err))
				}
				opts.Manifest = b
			}
			switch {
			case proxyURL != "" && opts.WebhookURL != "":
				return usageErrorf("--webhook-url and --webhook-proxy are both set: give one")
			case proxyURL != "":
				if u, err := url.Parse(proxyURL); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
					return usageErrorf("--webhook-proxy %q: want a webhook proxy channel's URL (https://smee.io/CHANNEL)", proxyURL)
				}
				opts.WebhookURL = proxyURL
			case opts.WebhookURL == "":
				return usageErrorf("--webhook-url is required: the https://HOST/webhook address where GitHub can reach countersign (or --webhook-proxy https://smee.io/CHANNEL)")
			}
			if opts.Dir == "" {
				dir, err := register.DefaultDir(opts.Manifest, opts.Name)
				if err != nil {
					return failed(err)
				}
				opts.Dir = dir
			}
			dir, err := filepath.Abs(opts.Dir)
			if err != nil {
				return failed(err)
			}
			opts.Dir = dir
			flow, err := register.Start(opts)
			if err != nil {
				return usageErrorf("%v", err)
			}
			if proxyURL == "" { // a channel's path is its own, not /webhook
				for _, w := range register.WebhookWarnings(opts.WebhookURL, isGitHubDotCom(opts.GitHubURL)) {
					fmt.Fprintf(c.stderr, "warning: %s\n", w)
				}
			}
			if root := register.GitCheckout(dir); root != "" {
				fmt.Fprintf(c.stderr, "warning: %s is inside the git checkout %s: keep the App's private key out of commits (.gitignore it, or choose a --dir outside)\n", dir, root)
			}
			fmt.Fprintf(c.stdout, "Open %s in your browser and press the button (waiting up to an hour; Ctrl-C stops).\n", flow.URL())
			fmt.Fprintf(c.stdout, "The App's id, private key and webhook secret will be written to %s.\n", dir)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			res, err := flow.Wait(ctx)
			if err != nil {
				return failed(err)
			}
			printNextSteps(c, opts, proxyURL, res)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.WebhookURL, "webhook-url", "", "where GitHub sends deliveries: https://HOST/webhook (required)")
	fs.StringVar(&proxyURL, "webhook-proxy", "", "a webhook proxy channel (https://smee.io/CHANNEL) as the App's webhook URL, for a machine GitHub cannot reach; instead of --webhook-url")
	fs.StringVar(&opts.Name, "name", "", `the App's name (default app.yml's "countersign"; names are unique on GitHub)`)
	fs.StringVar(&opts.Org, "org", "", "register the App under this organization (default: your own account)")
	fs.StringVar(&opts.Dir, "dir", "", "directory for app-id, private-key.pem and webhook-secret (default: countersign/APP-NAME in your configuration directory)")
	fs.StringVar(&opts.GitHubURL, "github-url", "https://github.com", "GitHub's web address; GitHub Enterprise Server: https://HOST [GITHUB_URL]")
	fs.StringVar(&opts.APIURL, "github-api-url", "", "GitHub's REST API (default: from --github-url) [GITHUB_API_URL]")
	fs.StringVar(&opts.Listen, "listen", "127.0.0.1:0", "address of the local page")
	fs.StringVar(&manifest, "manifest", "", "a manifest to use instead of the built-in app.yml")
	return cmd
}

func printNextSteps(c *cli, opts register.Options, proxyURL string, res *register.Result) {
	q := shellQuote
	key := filepath.Join(opts.Dir, register.PrivateKeyFile)
	secret := filepath.Join(opts.Dir, register.WebhookSecretFile)
	api := ""
	if opts.APIURL != "" && opts.APIURL != "https://api.github.com/" && opts.APIURL != "https://api.github.com" {
		api = "GITHUB_API_URL=" + q(opts.APIURL) + " "
	} else if !strings.Contains(opts.GitHubURL, "://github.com") {
		api = "GITHUB_API_URL=" + q(strings.TrimRight(opts.GitHubURL, "/")+"/api/v3/") + " "
	}
	if proxyURL != "" {
		api += "COUNTERSIGN_WEBHOOK_PROXY_URL=" + q(proxyURL) + " "
	}
	fmt.Fprintf(c.stdout, `Registered %s: App id %d.
Wrote (0600): %s
Install it on the repositories countersign should watch: %s/installations/new

Run countersign with it:
  %sGITHUB_APP_ID=%d GITHUB_PRIVATE_KEY_PATH=%s GITHUB_WEBHOOK_SECRET="$(cat %s)" countersign serve

On Kubernetes (deploy/kubernetes), the files are the secret's keys:
  kubectl create secret generic countersign --from-file=%s
`, res.Slug, res.AppID, strings.Join(res.Files, ", "), res.HTMLURL, api, res.AppID, q(key), q(secret), q(opts.Dir))
}

// isGitHubDotCom reports whether webURL is github.com (not a GitHub
// Enterprise Server, which may sit inside the webhook's network).
func isGitHubDotCom(webURL string) bool {
	u, err := url.Parse(webURL)
	return err == nil && strings.EqualFold(u.Hostname(), "github.com")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
