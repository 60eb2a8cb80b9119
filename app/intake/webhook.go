package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/countersign/countersign/app/jsonpick"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/app/deliveries"
	"github.com/countersign/countersign/app/store"
	"github.com/google/go-github/v60/github"
)

// MaxPayload is the largest delivery accepted (GitHub caps payloads at 25 MiB).
const MaxPayload = 25 << 20

// DefaultBodyTimeout is how long a delivery's body may take to arrive.
const DefaultBodyTimeout = 30 * time.Second

// envelope is the part of every payload that intake and logs need, and
// recognising an echo.
type envelope struct {
	Action     string `json:"action"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Issue       *echoIssue `json:"issue"`
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Sender *struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"sender"`
	// ProjectsV2Item is a board's item (projects_v2_item: an organization's
	// event, with no repository): its issue's node id orders it.
	ProjectsV2Item *projectsV2Item `json:"projects_v2_item"`
	// What recognising an echo reads (echo.go), in the same pass over the
	// payload; notEcho: those fields could not be read.
	echoFields
	notEcho bool
}

// plainEnvelope is envelope without what recognising an echo reads.
type plainEnvelope struct {
	Action     string `json:"action"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Issue *struct {
		Number int `json:"number"`
	} `json:"issue"`
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Sender *struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"sender"`
	ProjectsV2Item *projectsV2Item `json:"projects_v2_item"`
}

// projectsV2Item is what intake reads of a board's item.
type projectsV2Item struct {
	ContentNodeID string `json:"content_node_id"`
}

// readEnvelope reads payload's envelope and what recognising an echo needs,
// in one pass. A payload whose echo fields have another shape than an
// echo's is read again for its envelope alone (and is no echo).
func readEnvelope(payload []byte) (envelope, error) {
	if env, ok := pickEnvelope(payload); ok {
		return env, nil
	}
	var env envelope
	err := json.Unmarshal(payload, &env)
	var typeErr *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &typeErr) {
		return env, err
	}
	var plain plainEnvelope
	if err := json.Unmarshal(payload, &plain); err != nil {
		return envelope{}, err
	}
	env = envelope{Action: plain.Action, Repository: plain.Repository, Installation: plain.Installation,
		PullRequest: plain.PullRequest, Sender: plain.Sender, ProjectsV2Item: plain.ProjectsV2Item, notEcho: true}
	if plain.Issue != nil {
		env.Issue = &echoIssue{Number: plain.Issue.Number}
	}
	return env, nil
}

// envelopeMembers are the payload's members an envelope reads.
var envelopeMembers = []string{"action", "repository", "installation", "issue", "pull_request", "sender",
	"projects_v2_item", "label", "comment", "check_run", "check_suite"}

// pickEnvelope is readEnvelope without decoding the members an envelope
// does not read (the repository's but its name: most of a payload); false
// when it cannot, or a member is not of the envelope's shape (readEnvelope
// then decodes the payload whole, as before).
func pickEnvelope(payload []byte) (envelope, bool) {
	v, ok := jsonpick.Pick(payload, envelopeMembers...)
	if !ok {
		return envelope{}, false
	}
	var env envelope
	if repo := v[1]; repo != nil {
		switch repo[0] {
		case 'n': // null
		case '{':
			name, ok := jsonpick.Sub(repo, "full_name")
			if !ok {
				return envelope{}, false
			}
			env.Repository = &struct {
				FullName string `json:"full_name"`
			}{}
			if name[0] != nil && json.Unmarshal(name[0], &env.Repository.FullName) != nil {
				return envelope{}, false
			}
		default:
			return envelope{}, false
		}
	}
	for i, dst := range []any{&env.Action, nil, &env.Installation, &env.Issue, &env.PullRequest, &env.Sender,
		&env.ProjectsV2Item, &env.Label, &env.Comment, &env.CheckRun, &env.CheckSuite} {
		if dst != nil && v[i] != nil && json.Unmarshal(v[i], dst) != nil {
			return envelope{}, false
		}
	}
	return env, true
}

func (e *envelope) repo() string {
	if e.Repository == nil {
		return ""
	}
	return e.Repository.FullName
}

func (e *envelope) senderType() string {
	if e.Sender == nil {
		return ""
	}
	return e.Sender.Type
}

func (e *envelope) number() int {
	switch {
	case e.Issue != nil:
		return e.Issue.Number
	case e.PullRequest != nil:
		return e.PullRequest.Number
	}
	return 0
}

// key is the ordering key of a delivery: the issue or pull request it is about,
// else its repository (events of one key are processed one at a time, in order).
func (e *envelope) key() string {
	repo := e.repo()
	if repo == "" && e.ProjectsV2Item != nil && e.ProjectsV2Item.ContentNodeID != "" {
		return "board-item:" + e.ProjectsV2Item.ContentNodeID // as board.ItemKeyOf
	}
	if repo == "" {
		return "_global"
	}
	if n := e.number(); n > 0 {
		return fmt.Sprintf("%s#%d", repo, n)
	}
	return repo
}

// logAttrs are the attributes every log line about a delivery carries.
func deliveryAttrs(id, event string, e *envelope) []any {
	attrs := []any{slog.String("delivery", id), slog.String("event", event)}
	if e != nil {
		attrs = append(attrs, slog.String("action", e.Action), slog.String("repo", e.repo()))
		if n := e.number(); n > 0 {
			attrs = append(attrs, slog.Int("number", n))
		}
	}
	return attrs
}

// serveWebhook is POST /webhook: it checks the delivery and answers 202 only once
// the delivery is durably queued.
func (in *Intake) serveWebhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() { in.metrics.IntakeLatency.Observe(time.Since(start).Seconds()) }()
	event, id := github.WebHookType(r), github.DeliveryID(r)
	log := in.log.With(slog.String("delivery", id), slog.String("event", event))
	reply := func(code int, outcome, msg string) {
		in.metrics.Deliveries.WithLabelValues(deliveries.MetricEvent(event), outcome).Inc()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(code)
		fmt.Fprintln(w, msg)
	}

	if r.ContentLength > MaxPayload {
		log.Warn("delivery refused: too large", "bytes", r.ContentLength)
		reply(http.StatusRequestEntityTooLarge, "too_large", "payload larger than 25 MiB")
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil ||
		(ct != "application/json" && ct != "application/x-www-form-urlencoded") {
		log.Warn("delivery refused: unsupported content type", "content_type", r.Header.Get("Content-Type"))
		reply(http.StatusUnsupportedMediaType, "malformed", "Content-Type must be application/json or application/x-www-form-urlencoded")
		return
	}
	body, err := in.readBody(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			log.Warn("delivery refused: too large")
			reply(http.StatusRequestEntityTooLarge, "too_large", "payload larger than 25 MiB")
		case errors.Is(err, os.ErrDeadlineExceeded):
			log.Warn("delivery refused: body not received in time", "error", err)
			reply(http.StatusRequestTimeout, "timeout", "the body did not arrive in time")
		default:
			log.Warn("delivery refused: body unreadable", "error", err)
			reply(http.StatusBadRequest, "malformed", "the body could not be read")
		}
		return
	}
	// Only X-Hub-Signature-256 authenticates a delivery: the SHA-1 signature
	// GitHub also sends (X-Hub-Signature) is never enough on its own.
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if !strings.HasPrefix(sig, "sha256=") {
		log.Warn("delivery refused: bad signature", "error", "no sha256 signature")
		reply(http.StatusUnauthorized, "bad_signature", "X-Hub-Signature-256 missing")
		return
	}
	payload, err := github.ValidatePayloadFromBody(r.Header.Get("Content-Type"), bytes.NewReader(body), sig, in.cfg.WebhookSecret)
	if err != nil {
		log.Warn("delivery refused: bad signature", "error", err)
		reply(http.StatusUnauthorized, "bad_signature", "signature missing or wrong")
		return
	}
	if event == "" {
		log.Warn("delivery refused: no X-GitHub-Event header")
		reply(http.StatusBadRequest, "malformed", "missing X-GitHub-Event header")
		return
	}
	env, err := readEnvelope(payload)
	if err != nil {
		log.Warn("delivery refused: malformed JSON", "error", err)
		reply(http.StatusBadRequest, "malformed", "malformed JSON payload")
		return
	}
	log = in.log.With(deliveryAttrs(id, event, &env)...)
	switch {
	case event == "ping":
		log.Info("ping")
		reply(http.StatusOK, "ping", "pong")
		return
	case !deliveries.Webhook(event):
		log.Debug("delivery ignored: event not handled")
		reply(http.StatusAccepted, "ignored", "event not handled")
		return
	case id == "":
		log.Warn("delivery refused: no X-GitHub-Delivery header")
		reply(http.StatusBadRequest, "malformed", "missing X-GitHub-Delivery header")
		return
	}

	if in.echo(r.Context(), event, &env) {
		in.metrics.Echoes.WithLabelValues(deliveries.MetricEvent(event)).Inc()
		log.Debug("delivery is countersign's own write coming back: not queued")
		reply(http.StatusAccepted, "echo", "countersign's own write")
		return
	}
	accepted, err := in.queue.Accept(r.Context(), store.Delivery{
		ID: id, Event: event, Key: env.key(), Action: env.Action, Payload: payload, ReceivedAt: time.Now().UTC(),
		Interactive: deliveries.WebhookInteractive(event, env.Action, env.senderType()),
	})
	if errors.Is(err, store.ErrInvalid) {
		// Asking again cannot help: GitHub must not be told to redeliver it.
		log.Warn("delivery refused: it cannot be queued", "error", err)
		reply(http.StatusBadRequest, "unqueueable", "the delivery cannot be queued: "+err.Error())
		return
	}
	if err != nil {
		if ok, suppressed := in.queueErrors.Allow(); ok {
			log.Error("store error: delivery not queued", "error", err, "suppressed", suppressed)
		}
		reply(http.StatusServiceUnavailable, "error", "could not queue the delivery; redeliver it later")
		return
	}
	if !accepted {
		log.Info("delivery already seen")
		reply(http.StatusOK, "duplicate", "delivery already received")
		return
	}
	log.Debug("delivery queued")
	in.notify.Notify()
	reply(http.StatusAccepted, "accepted", "queued")
}

// readBody reads the delivery's body, at most MaxPayload bytes, within the
// body timeout.
func (in *Intake) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	timeout := in.cfg.BodyTimeout
	if timeout <= 0 {
		timeout = DefaultBodyTimeout
	}
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)); err != nil {
		in.log.Debug("cannot bound the body read", "error", err)
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPayload))
}
