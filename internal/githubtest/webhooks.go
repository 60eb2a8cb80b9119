package githubtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/go-github/v60/github"
)

// SentWebhook is one webhook delivery (or attempt) of the fake.
type SentWebhook struct {
	ID         string // X-GitHub-Delivery
	Event      string // X-GitHub-Event, e.g. "issue_comment"
	Action     string // payload's "action" ("" for push and status)
	Sender     string // sender.login
	SenderType string // "User" or "Bot"
	Repo       string // owner/name
	Payload    []byte
	Queued     time.Time
	// Sent is when the POST was answered (zero while pending, or if not sent).
	Sent time.Time
	// Status is the receiver's HTTP status; 0 if not (yet) sent, if no
	// webhook URL was set, or if the POST failed (see Error).
	Status     int
	Error      string
	Dropped    bool // discarded because of DropWebhooks(true)
	Redelivery bool // created by Redeliver or POST /app/hook/deliveries/{id}/attempts
	Pending    bool // still queued
	// LogID is the delivery's id in the App's delivery log (GET
	// /app/hook/deliveries); 0 until it was attempted. Each attempt (a
	// redelivery too) is a new entry, with the same ID (guid).
	LogID int64
	// Fault is the injected failure (SetWebhookFault, SetBotDown), if any.
	Fault string
}

type delivery struct {
	SentWebhook
	duration time.Duration
	fault    string // the SetWebhookFault it met when queued
}

// SetWebhook sets where webhooks are POSTed and the secret for their
// X-Hub-Signature-256 header. With url "" webhooks are recorded, not sent.
func (s *Server) SetWebhook(url string, secret []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.hookURL = url
	s.hookSecret = append([]byte(nil), secret...)
}

// SetWebhookPaused holds (true) or resumes (false) webhook sending. Held
// webhooks stay queued in order; WaitWebhooks waits for them.
func (s *Server) SetWebhookPaused(paused bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.paused = paused
	s.wcond.Broadcast()
}

// DropWebhooks makes the fake lose (true) the webhooks of every following
// action, like a missed delivery: they are recorded with Dropped set and can
// be sent later with Redeliver.
func (s *Server) DropWebhooks(drop bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.drop = drop
}

// Deliveries returns every webhook queued so far, in order, including
// dropped ones and redeliveries.
func (s *Server) Deliveries() []SentWebhook {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	out := make([]SentWebhook, 0, len(s.deliveries))
	for _, d := range s.deliveries {
		w := d.SentWebhook
		w.Payload = append([]byte(nil), d.Payload...)
		out = append(out, w)
	}
	return out
}

// WaitWebhooks blocks until every webhook queued before the call has been
// posted and answered (or found no URL). It returns ctx's error if ctx ends
// first, for example while sending is paused. It waits for those webhooks
// themselves, not for as many: with jitter, webhooks queued after the call
// (the bot's own writes make some) may be answered before an earlier one
// still waiting out its delay.
func (s *Server) WaitWebhooks(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	queued := append([]*delivery(nil), s.deliveries...)
	stop := context.AfterFunc(ctx, func() {
		s.wmu.Lock()
		s.wcond.Broadcast()
		s.wmu.Unlock()
	})
	defer stop()
	pending := func() bool {
		for len(queued) > 0 && !queued[0].Pending {
			queued = queued[1:]
		}
		return len(queued) > 0
	}
	for pending() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.closed {
			return errors.New("githubtest: server closed")
		}
		s.wcond.Wait()
	}
	return nil
}

// Redeliver sends a past webhook again, with the same X-GitHub-Delivery id
// and payload, after the ones already queued.
func (s *Server) Redeliver(deliveryID string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, d := range s.deliveries {
		if d.ID == deliveryID {
			nd := &delivery{SentWebhook: SentWebhook{
				ID: d.ID, Event: d.Event, Action: d.Action, Sender: d.Sender, SenderType: d.SenderType,
				Repo: d.Repo, Payload: d.Payload, Queued: time.Now(), Redelivery: true, Pending: true,
			}}
			nd.fault = s.takeHookFault(nd)
			s.deliveries = append(s.deliveries, nd)
			s.queue = append(s.queue, nd)
			s.enqueued++
			s.wcond.Broadcast()
			return nil
		}
	}
	return fmt.Errorf("githubtest: no delivery %q", deliveryID)
}

func newDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// emit marshals payload now (a snapshot of the state) and queues the
// webhook. Call with s.mu held, so webhooks are queued in action order.
func (s *Server) emit(rp *repoState, event, action, sender string, payload any) {
	body, err := json.Marshal(payload)
	if err != nil {
		s.logf("marshal %s webhook: %v", event, err)
		return
	}
	d := &delivery{SentWebhook: SentWebhook{
		ID: newDeliveryID(), Event: event, Action: action, Sender: sender, SenderType: userType(sender),
		Payload: body, Queued: time.Now(),
	}}
	if rp != nil {
		d.Repo = rp.fullName()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.deliveries = append(s.deliveries, d)
	if s.drop {
		d.Dropped = true
		s.logf("webhook %s %s.%s dropped", d.ID, event, action)
		return
	}
	d.Pending = true
	d.fault = s.takeHookFault(d)
	s.queue = append(s.queue, d)
	s.enqueued++
	s.wcond.Broadcast()
}

// sendLoop is the single sender goroutine: deliveries go out one at a time,
// in queue order.
func (s *Server) sendLoop() {
	for {
		s.wmu.Lock()
		for !s.closed && (len(s.queue) == 0 || s.paused) {
			s.wcond.Wait()
		}
		if s.closed {
			s.wmu.Unlock()
			return
		}
		d := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		url, secret := s.hookURL, s.hookSecret
		if delay, ok := s.jitterDelay(); ok { // jitter.go: sent on its own, after a delay
			s.wg.Add(1)
			s.wmu.Unlock()
			go s.sendLater(d, url, secret, delay)
			continue
		}
		s.wmu.Unlock()
		s.send(d, url, secret)
	}
}

// send posts d and records the answer.
func (s *Server) send(d *delivery, url string, secret []byte) {
	status, errText := 0, ""
	start := time.Now()
	s.wmu.Lock()
	fault := d.fault
	if s.botDown {
		fault = "failed to connect to host"
	}
	s.wmu.Unlock()
	switch {
	case url == "":
	case fault != "":
		status, errText = faultResult(fault)
		d.Fault = fault
		s.logf("webhook %s %s.%s: %s", d.ID, d.Event, d.Action, fault)
	default:
		status, errText = s.post(d, url, secret)
	}

	s.wmu.Lock()
	d.Status = status
	d.Error = errText
	d.Pending = false
	if url != "" {
		d.Sent = time.Now()
		d.duration = d.Sent.Sub(start)
		s.logSeq++
		d.LogID = s.logSeq
		s.hookLog = append(s.hookLog, d)
	}
	s.processed++
	s.wcond.Broadcast()
	s.wmu.Unlock()
}

func (s *Server) post(d *delivery, url string, secret []byte) (int, string) {
	req, err := http.NewRequestWithContext(s.closeCtx, http.MethodPost, url, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/fake")
	req.Header.Set("X-GitHub-Event", d.Event)
	req.Header.Set("X-GitHub-Delivery", d.ID)
	req.Header.Set("X-GitHub-Hook-ID", "1")
	req.Header.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	req.Header.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(s.opts.AppID, 10))
	if len(secret) > 0 {
		m := hmac.New(sha256.New, secret)
		m.Write(d.Payload)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
		m1 := hmac.New(sha1.New, secret)
		m1.Write(d.Payload)
		req.Header.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
	}
	resp, err := s.hookClient.Do(req)
	if err != nil {
		s.logf("webhook %s %s.%s: %v", d.ID, d.Event, d.Action, err)
		return 0, err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	s.logf("webhook %s %s.%s (sender %s) -> %d", d.ID, d.Event, d.Action, d.Sender, resp.StatusCode)
	return resp.StatusCode, ""
}

// ---- payload builders (call with s.mu held) ----

// withFields marshals v and adds (or replaces) top-level keys; for the few
// payload fields go-github's event structs lack.
type withFields struct {
	v     any
	extra map[string]any
}

func (w withFields) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.v)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range w.extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[k] = raw
	}
	return json.Marshal(m)
}

type issueExtra struct {
	label     *labelState
	assignee  string
	changes   *github.EditChange
	milestone *milestoneState
}

// emitIssue sends the event GitHub sends for an issue-level change: an
// "issues" event for an issue, a "pull_request" event for a PR.
func (s *Server) emitIssue(rp *repoState, is *issueState, action, sender string, x issueExtra) {
	s.recordIssueEvent(is, action, sender, x)
	repo, inst, snd := s.ghRepo(rp), s.ghInstallation(rp.installation), s.ghUser(sender)
	var label *github.Label
	if x.label != nil {
		label = s.ghLabel(rp, x.label)
	}
	var assignee *github.User
	if x.assignee != "" {
		assignee = s.ghUser(x.assignee)
	}
	if is.pr != nil {
		ev := &github.PullRequestEvent{
			Action: ptr(action), Number: ptr(is.number), PullRequest: s.ghPull(rp, is),
			Assignee: assignee, Label: label, Changes: x.changes,
			Repo: repo, Sender: snd, Installation: inst,
		}
		if x.milestone != nil {
			s.emit(rp, "pull_request", action, sender, withFields{ev, map[string]any{"milestone": s.ghMilestone(rp, x.milestone)}})
			return
		}
		s.emit(rp, "pull_request", action, sender, ev)
		return
	}
	ev := &github.IssuesEvent{
		Action: ptr(action), Issue: s.ghIssue(rp, is), Assignee: assignee, Label: label,
		Changes: x.changes, Repo: repo, Sender: snd, Installation: inst,
	}
	if x.milestone != nil {
		ev.Milestone = s.ghMilestone(rp, x.milestone)
	}
	s.emit(rp, "issues", action, sender, withFields{ev, map[string]any{"issue": s.ghIssueFull(rp, is)}})
}

// recordIssueEvent keeps, in the issue's history, the changes GitHub's issue
// events API lists.
func (s *Server) recordIssueEvent(is *issueState, action, actor string, x issueExtra) {
	switch action {
	case "labeled", "unlabeled", "assigned", "unassigned", "closed", "reopened", "milestoned", "demilestoned":
	default:
		return
	}
	ev := &issueEventState{id: s.newID(), event: action, actor: actor, assignee: x.assignee, createdAt: now()}
	if x.label != nil {
		ev.label, ev.labelColor = x.label.name, x.label.color
	}
	if x.milestone != nil {
		ev.milestone = x.milestone.title
	}
	is.events = append(is.events, ev)
}

func (s *Server) emitPull(rp *repoState, is *issueState, action, sender string, mod func(*github.PullRequestEvent)) {
	ev := &github.PullRequestEvent{
		Action: ptr(action), Number: ptr(is.number), PullRequest: s.ghPull(rp, is),
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation),
	}
	if mod != nil {
		mod(ev)
	}
	s.emit(rp, "pull_request", action, sender, ev)
}

func (s *Server) emitComment(rp *repoState, is *issueState, c *commentState, action, sender string, changes *github.EditChange) {
	s.emit(rp, "issue_comment", action, sender, withFields{&github.IssueCommentEvent{
		Action: ptr(action), Issue: s.ghIssue(rp, is), Comment: s.ghComment(rp, c), Changes: changes,
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation),
	}, map[string]any{"issue": s.ghIssueFull(rp, is)}})
}

func (s *Server) emitLabel(rp *repoState, l *labelState, action, sender string, changes map[string]any) {
	ev := &github.LabelEvent{
		Action: ptr(action), Label: s.ghLabel(rp, l),
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation),
	}
	if len(changes) > 0 {
		s.emit(rp, "label", action, sender, withFields{ev, map[string]any{"changes": changes}})
		return
	}
	s.emit(rp, "label", action, sender, ev)
}

func (s *Server) emitMilestone(rp *repoState, m *milestoneState, action, sender string, changes map[string]any) {
	ev := &github.MilestoneEvent{
		Action: ptr(action), Milestone: s.ghMilestone(rp, m),
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation),
	}
	if len(changes) > 0 {
		s.emit(rp, "milestone", action, sender, withFields{ev, map[string]any{"changes": changes}})
		return
	}
	s.emit(rp, "milestone", action, sender, ev)
}

func (s *Server) emitCheckRun(rp *repoState, cr *checkRunState, action, sender string) {
	s.emit(rp, "check_run", action, sender, &github.CheckRunEvent{
		Action: ptr(action), CheckRun: s.ghCheckRun(rp, cr),
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation),
	})
}

func (s *Server) emitStatus(rp *repoState, st *statusState, sender string) {
	var c *github.RepositoryCommit
	if cm := rp.commits[st.sha]; cm != nil {
		c = s.ghRepoCommit(rp, cm)
	} else {
		c = &github.RepositoryCommit{SHA: ptr(st.sha)}
	}
	s.emit(rp, "status", "", sender, &github.StatusEvent{
		ID: ptr(st.id), SHA: ptr(st.sha), Name: ptr(rp.fullName()), State: ptr(st.state),
		Description: strOrNil(st.description), TargetURL: strOrNil(st.targetURL), Context: ptr(st.context),
		Commit: c, Branches: []*github.Branch{}, CreatedAt: ts(st.createdAt), UpdatedAt: ts(st.createdAt),
		Repo: s.ghRepo(rp), Sender: s.ghUser(sender), Installation: s.ghInstallation(rp.installation),
	})
}
