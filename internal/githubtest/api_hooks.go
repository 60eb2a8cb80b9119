package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The App's webhook delivery log, as GitHub keeps it: every attempt at a
// webhook (a redelivery too) is an entry with its own id, the delivery's guid
// (X-GitHub-Delivery), and the receiver's answer. GitHub keeps three days of
// it and never retries a failed delivery by itself: the App may ask it to
// (POST /app/hook/deliveries/{id}/attempts).

// HookFault is how a faulted webhook fails (SetWebhookFault).
type HookFault string

const (
	// HookTimeout: the delivery is lost on the way; GitHub gives up waiting
	// and logs it as failed (status_code 0). The receiver sees nothing.
	HookTimeout HookFault = "timed out"
	// HookUnavailable: the receiver answered 503 (without seeing it here).
	HookUnavailable HookFault = "503"
)

type hookFault struct {
	remaining int
	kind      HookFault
	match     func(event, action string) bool
}

// SetWebhookFault makes the next n webhooks queued (redeliveries included) for which match(event, action) is
// true (nil: any) fail as kind, without reaching the receiver; they are logged
// as failed in the App's delivery log, where healing finds them.
func (s *Server) SetWebhookFault(n int, kind HookFault, match func(event, action string) bool) {
	if n <= 0 {
		return
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.hookFaults = append(s.hookFaults, &hookFault{remaining: n, kind: kind, match: match})
}

// SetBotDown makes every webhook fail (true) as if the receiver could not be
// reached ("failed to connect to host"), until SetBotDown(false).
func (s *Server) SetBotDown(down bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.botDown = down
}

// SetOutage makes every API call (installation token requests and the App's
// own calls included) answer status with headers until SetOutage(0, nil):
// GitHub is down, or rate limiting everything.
func (s *Server) SetOutage(status int, headers map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		s.outage = nil
		return
	}
	h := map[string]string{}
	for k, v := range headers {
		h[k] = v
	}
	s.outage = &fault{remaining: 1 << 30, status: status, headers: h}
}

// takeHookFault returns the fault d meets, "" if none. Call with s.wmu held.
func (s *Server) takeHookFault(d *delivery) string {
	for i, f := range s.hookFaults {
		if f.match != nil && !f.match(d.Event, d.Action) {
			continue
		}
		f.remaining--
		if f.remaining <= 0 {
			s.hookFaults = append(s.hookFaults[:i:i], s.hookFaults[i+1:]...)
		}
		return string(f.kind)
	}
	return ""
}

// faultResult is the logged status code and error of a faulted delivery.
func faultResult(fault string) (int, string) {
	if code, err := strconv.Atoi(fault); err == nil {
		return code, ""
	}
	return 0, fault
}

// hookDelivery is one entry of the delivery log, as the REST API shows it
// (#/components/schemas/hook-delivery-item).
type hookDelivery struct {
	ID             int64     `json:"id"`
	GUID           string    `json:"guid"`
	DeliveredAt    time.Time `json:"delivered_at"`
	Redelivery     bool      `json:"redelivery"`
	Duration       float64   `json:"duration"`
	Status         string    `json:"status"`
	StatusCode     int       `json:"status_code"`
	Event          string    `json:"event"`
	Action         *string   `json:"action"`
	InstallationID *int64    `json:"installation_id"`
	RepositoryID   *int64    `json:"repository_id"`
	ThrottledAt    *string   `json:"throttled_at"`
}

func (s *Server) hookItem(d *delivery) hookDelivery {
	var ids struct {
		Installation *struct {
			ID int64 `json:"id"`
		} `json:"installation"`
		Repository *struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	_ = json.Unmarshal(d.Payload, &ids)
	it := hookDelivery{ID: d.LogID, GUID: d.ID, DeliveredAt: d.Sent.UTC().Truncate(time.Second), Redelivery: d.Redelivery,
		Duration: d.duration.Seconds(), StatusCode: d.Status, Event: d.Event}
	switch {
	case d.Status >= 200 && d.Status < 300:
		it.Status = "OK"
	case d.Status != 0:
		it.Status = fmt.Sprintf("Invalid HTTP Response: %d", d.Status)
	case d.Error != "":
		it.Status = d.Error
	default:
		it.Status = "failed to connect to host"
	}
	if d.Action != "" {
		it.Action = ptr(d.Action)
	}
	if ids.Installation != nil {
		it.InstallationID = ptr(ids.Installation.ID)
	}
	if ids.Repository != nil {
		it.RepositoryID = ptr(ids.Repository.ID)
	}
	return it
}

// hookCursorPrefix marks the opaque cursors of GET /app/hook/deliveries.
const hookCursorPrefix = "v1_"

// listHookDeliveries is GET /app/hook/deliveries: newest first, per_page
// (default 30, max 100), cursor pagination through the Link header.
func (s *Server) listHookDeliveries(c *apiCall) {
	q := c.r.URL.Query()
	perPage, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || perPage < 1 {
		perPage = 30
	}
	perPage = min(perPage, 100)
	before := int64(1) << 62
	if cur := q.Get("cursor"); cur != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(cur, hookCursorPrefix), 10, 64)
		if !strings.HasPrefix(cur, hookCursorPrefix) || err != nil {
			c.invalid("HookDelivery", "cursor", "invalid", "cursor is invalid")
			return
		}
		before = n
	}
	s.wmu.Lock()
	items := []hookDelivery{}
	i := len(s.hookLog) - 1
	for ; i >= 0 && s.hookLog[i].LogID >= before; i-- {
	}
	for ; i >= 0 && len(items) < perPage; i-- {
		items = append(items, s.hookItem(s.hookLog[i]))
	}
	more := i >= 0
	s.wmu.Unlock()
	if more {
		q2 := c.r.URL.Query()
		q2.Set("per_page", strconv.Itoa(perPage))
		q2.Set("cursor", hookCursorPrefix+strconv.FormatInt(items[len(items)-1].ID, 10))
		c.w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, c.r.Host, c.info.origPath, q2.Encode()))
	}
	c.json(http.StatusOK, items)
}

func (s *Server) hookEntry(c *apiCall) *delivery {
	id, _ := c.intVar("id")
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, d := range s.hookLog {
		if d.LogID == id {
			return d
		}
	}
	return nil
}

// getHookDelivery is GET /app/hook/deliveries/{id}: the entry with the
// request and response (#/components/schemas/hook-delivery).
func (s *Server) getHookDelivery(c *apiCall) {
	d := s.hookEntry(c)
	if d == nil {
		c.notFound()
		return
	}
	s.wmu.Lock()
	it, hookURL := s.hookItem(d), s.hookURL
	s.wmu.Unlock()
	c.json(http.StatusOK, struct {
		hookDelivery
		URL     string `json:"url"`
		Request struct {
			Headers map[string]string `json:"headers"`
			Payload json.RawMessage   `json:"payload"`
		} `json:"request"`
		Response struct {
			Headers map[string]string `json:"headers"`
			Payload *string           `json:"payload"`
		} `json:"response"`
	}{hookDelivery: it, URL: hookURL, Request: struct {
		Headers map[string]string `json:"headers"`
		Payload json.RawMessage   `json:"payload"`
	}{Headers: map[string]string{"X-GitHub-Event": d.Event, "X-GitHub-Delivery": d.ID}, Payload: d.Payload},
		Response: struct {
			Headers map[string]string `json:"headers"`
			Payload *string           `json:"payload"`
		}{Headers: map[string]string{}}})
}

// redeliverHookDelivery is POST /app/hook/deliveries/{id}/attempts: 202,
// and the same body is sent again with the same X-GitHub-Delivery, logged as
// a new entry with redelivery true.
func (s *Server) redeliverHookDelivery(c *apiCall) {
	d := s.hookEntry(c)
	if d == nil {
		c.notFound()
		return
	}
	if err := s.Redeliver(d.ID); err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	c.json(http.StatusAccepted, map[string]any{})
}

// HookLog is the App's delivery log, oldest first (for assertions).
func (s *Server) HookLog() []SentWebhook {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	out := make([]SentWebhook, 0, len(s.hookLog))
	for _, d := range s.hookLog {
		out = append(out, d.SentWebhook)
	}
	return out
}
