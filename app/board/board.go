// Package board keeps an organization's GitHub Projects board true (DESIGN
// §5, docs/board.md): every task and goal issue of a repository that names
// the board (board.project) is an item of it, with one single-select field
// (board.field) at the task's or goal's state. It applies the board effects
// rules decides (Apply), checks that a configured project can be reached
// (Reach), hears a person's change of the board (OnItem: projects_v2_item
// edited or deleted) and compares the board with the records
// (DecideReconcile).
//
// It speaks GraphQL (GitHub has no REST API for Projects): queries through
// the installation's GraphQL client, mutations through its paced one, so
// that each mutation takes a write turn and counts in the write budget as a
// REST write does. It keeps in the store what it learned: the project's
// node id, its field's id and options (ProjectKey), and each issue's item
// and the value countersign last set (ItemKey), so that a state change
// costs one mutation.
package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/app/fault"
	"github.com/countersign/countersign/app/gh"
	"github.com/countersign/countersign/app/records"
	"github.com/countersign/countersign/app/store"
	"github.com/countersign/countersign/rules"
	"github.com/shurcooL/githubv4"
)

// Reader is what the board reads of GitHub's GraphQL API, for one
// installation (githubv4.Client's Query).
type Reader interface {
	Query(ctx context.Context, q any, variables map[string]any) error
}

// Writer is what the board writes through GitHub's GraphQL API, for one
// installation (githubv4.Client's Mutate), each mutation paced.
type Writer interface {
	Mutate(ctx context.Context, m any, input githubv4.Input, variables map[string]any) error
}

// Clients gives installation inst's reader and writer.
type Clients func(inst int64) (Reader, Writer, error)

// Board applies board effects and decides the board's deliveries.
type Board struct {
	store   store.Store
	clients Clients
	log     *slog.Logger
}

// New is the board reading and writing GitHub through clients and keeping
// what it learned in st.
func New(st store.Store, clients Clients, log *slog.Logger) *Board {
	return &Board{store: st, clients: clients, log: log}
}

// Project is what countersign knows of a board: the project's node id, its
// field's and the field's options' (option name -> id).
type Project struct {
	ID      string            `json:"id"`
	FieldID string            `json:"field_id"`
	Options map[string]string `json:"options"`
}

// Item is an issue's item on a board and the value countersign last set on
// it ("" when not known: the next effect writes it whatever it is).
type Item struct {
	ID    string `json:"id"`
	Value string `json:"value,omitempty"`
}

// ProjectKey is the store key of what countersign knows of board b.
func ProjectKey(b rules.BoardConfig) string {
	return "board-project/" + canonical(b.Project) + "|" + strings.ToLower(b.Field)
}

// UnreachableKey is the store key that says why project url cannot be
// reached by installation inst (absent: it could be, or it was not tried).
// It is the installation's own: another installation that names the same
// project and cannot reach it (another organization's, whose repositories
// may not use it) never stops this one's board from being kept.
func UnreachableKey(inst int64, url string) string {
	return "board-unreachable/" + strconv.FormatInt(inst, 10) + "/" + canonical(url)
}

// ItemKey is the store key of issue n of repo's item on project url.
func ItemKey(url, repo string, n int) string {
	return "board-item/" + canonical(url) + "/" + rules.TaskKey(repo, n)
}

// StaleItem is the value of an item record whose field someone else set:
// the next effect writes it.
func StaleItem(it Item) []byte {
	it.Value = ""
	b, _ := json.Marshal(it) // strings: cannot fail
	return b
}

func canonical(url string) string {
	if p, err := rules.ParseBoardProject(url); err == nil {
		return p.URL()
	}
	return url
}

// ErrUnreachable wraps why a project cannot be reached: it is not the
// organization's, the App may not see it (no organization projects
// permission), or it is a user's.
var ErrUnreachable = errors.New("the project cannot be reached")

type unreachable struct{ why string }

func (u unreachable) Error() string { return u.why }
func (u unreachable) Unwrap() error { return ErrUnreachable }

// classify turns GitHub's answer about a project into ErrUnreachable when
// asking again cannot help.
func classify(err error, url string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Resource not accessible by integration"):
		return unreachable{fmt.Sprintf("the App may not reach %s: the installation has not been granted the organization projects (write) permission", url)}
	case strings.Contains(msg, "Could not resolve to an Organization"):
		return unreachable{fmt.Sprintf("%s is not a project of an organization the App is installed on", url)}
	case strings.Contains(msg, "Could not resolve to a ProjectV2"):
		return unreachable{fmt.Sprintf("%s does not exist, or the App may not see it", url)}
	}
	return err
}

// projectQuery reads a project and its fields.
type projectQuery struct {
	Organization struct {
		ProjectV2 struct {
			ID     string
			Fields struct {
				Nodes []struct {
					Field struct {
						ID      string
						Name    string
						Options []struct {
							ID   string
							Name string
						}
					} `graphql:"... on ProjectV2SingleSelectField"`
				}
			} `graphql:"fields(first: 100)"`
		} `graphql:"projectV2(number: $number)"`
	} `graphql:"organization(login: $org)"`
}

// Reach reads board b's project (one query) and reports why it cannot be
// reached: an ErrUnreachable, or another error when GitHub could not say.
// webHost is the host countersign's GitHub serves ("": any; a project on
// another host cannot be reached).
func (b *Board) Reach(ctx context.Context, inst int64, cfg rules.BoardConfig, webHost string) error {
	_, err := b.readProject(ctx, inst, cfg, webHost)
	return err
}

func (b *Board) readProject(ctx context.Context, inst int64, cfg rules.BoardConfig, webHost string) (*projectQuery, error) {
	p, err := rules.ParseBoardProject(cfg.Project)
	if err != nil {
		return nil, unreachable{"board.project " + err.Error()}
	}
	if webHost != "" && !sameHost(p.Host, webHost) {
		return nil, unreachable{fmt.Sprintf("%s is on %s, but countersign talks to %s", cfg.Project, p.Host, webHost)}
	}
	r, _, err := b.clients(inst)
	if err != nil {
		return nil, fault.Permanent(err)
	}
	var q projectQuery
	err = r.Query(ctx, &q, map[string]any{"org": githubv4.String(p.Org), "number": githubv4.Int(int32(p.Number))})
	if err = classify(err, cfg.Project); err != nil {
		return nil, err
	}
	if q.Organization.ProjectV2.ID == "" {
		return nil, unreachable{fmt.Sprintf("%s does not exist, or the App may not see it", cfg.Project)}
	}
	return &q, nil
}

// sameHost reports whether a project on host is one of webHost, the host
// countersign's GitHub serves (gh.GitHub.WebHost).
func sameHost(host, webHost string) bool {
	return strings.EqualFold(host, webHost)
}

// project is what countersign knows of board cfg, read (and its field
// created with every option, if missing) when it knows nothing yet.
func (b *Board) project(ctx context.Context, inst int64, cfg rules.BoardConfig) (Project, error) {
	var known Project
	if ok, err := records.Load(ctx, b.store, ProjectKey(cfg), &known); err != nil || ok && known.ID != "" && known.FieldID != "" {
		return known, err
	}
	q, err := b.readProject(ctx, inst, cfg, "")
	if err != nil {
		return known, err
	}
	known = Project{ID: q.Organization.ProjectV2.ID, Options: map[string]string{}}
	for _, n := range q.Organization.ProjectV2.Fields.Nodes {
		if n.Field.ID != "" && strings.EqualFold(n.Field.Name, cfg.Field) {
			known.FieldID = n.Field.ID
			for _, o := range n.Field.Options {
				known.Options[o.Name] = o.ID
			}
		}
	}
	if known.FieldID == "" {
		if err := b.createField(ctx, inst, cfg, &known); err != nil {
			return known, err
		}
	}
	for _, o := range rules.BoardOptions() {
		if known.Options[o] == "" {
			return known, fault.Permanent(fmt.Errorf("the field %q of %s has no option %q: add it, or name another field in board.field", cfg.Field, cfg.Project, o))
		}
	}
	enc, err := json.Marshal(known)
	if err != nil {
		return known, fmt.Errorf("encode board record: %w", err)
	}
	if err := b.store.Put(ctx, ProjectKey(cfg), enc); err != nil {
		return known, fmt.Errorf("remember the board: %w", err)
	}
	return known, nil
}

// optionColors are the colours of the field's options: the state labels'.
var optionColors = map[string]githubv4.ProjectV2SingleSelectFieldOptionColor{
	"pending": githubv4.ProjectV2SingleSelectFieldOptionColorGray, "assigned": githubv4.ProjectV2SingleSelectFieldOptionColorBlue,
	"in-progress": githubv4.ProjectV2SingleSelectFieldOptionColorYellow, "review": githubv4.ProjectV2SingleSelectFieldOptionColorOrange,
	"completed": githubv4.ProjectV2SingleSelectFieldOptionColorPurple, "verified": githubv4.ProjectV2SingleSelectFieldOptionColorGreen,
	"escalated": githubv4.ProjectV2SingleSelectFieldOptionColorRed, "open": githubv4.ProjectV2SingleSelectFieldOptionColorGray,
	"active": githubv4.ProjectV2SingleSelectFieldOptionColorYellow, "pending-verify": githubv4.ProjectV2SingleSelectFieldOptionColorPurple,
}

// createField creates board cfg's field with every option (one mutation).
func (b *Board) createField(ctx context.Context, inst int64, cfg rules.BoardConfig, known *Project) error {
	_, w, err := b.clients(inst)
	if err != nil {
		return fault.Permanent(err)
	}
	var opts []githubv4.ProjectV2SingleSelectFieldOptionInput
	for _, o := range rules.BoardOptions() {
		opts = append(opts, githubv4.ProjectV2SingleSelectFieldOptionInput{Name: githubv4.String(o), Color: optionColors[o],
			Description: githubv4.String("kept by countersign")})
	}
	var m struct {
		CreateProjectV2Field struct {
			ProjectV2Field struct {
				Field struct {
					ID      string
					Options []struct {
						ID   string
						Name string
					}
				} `graphql:"... on ProjectV2SingleSelectField"`
			} `graphql:"projectV2Field"`
		} `graphql:"createProjectV2Field(input: $input)"`
	}
	in := githubv4.CreateProjectV2FieldInput{ProjectID: githubv4.ID(known.ID), DataType: githubv4.ProjectV2CustomFieldTypeSingleSelect,
		Name: githubv4.String(cfg.Field), SingleSelectOptions: &opts}
	if err := w.Mutate(ctx, &m, in, nil); err != nil {
		return fmt.Errorf("create the field %q of %s: %w", cfg.Field, cfg.Project, classify(err, cfg.Project))
	}
	f := m.CreateProjectV2Field.ProjectV2Field.Field
	known.FieldID = f.ID
	for _, o := range f.Options {
		known.Options[o.Name] = o.ID
	}
	b.log.Info("board field created", "project", cfg.Project, "field", cfg.Field)
	return nil
}

// issueNumber is the issue an effect is about: a task's, or a goal's goal
// issue (0: it has none yet).
func (b *Board) issueNumber(ctx context.Context, e rules.Effect) (int, error) {
	if !e.Goal {
		return e.Number, nil
	}
	g, err := records.LoadGoal(ctx, b.store, e.Repo, e.Number)
	if err != nil {
		return 0, err
	}
	if g != nil && g.Issue != 0 {
		return g.Issue, nil
	}
	var n int
	_, err = records.Load(ctx, b.store, "goal-issue-of/"+rules.GoalKey(e.Repo, e.Number), &n)
	return n, err
}

// Apply applies board effect e of installation inst: the issue is added to
// the project unless countersign knows its item, then its field is set,
// unless countersign set that value last. A state change of an issue on the
// board costs one mutation; its first costs a read of the issue's node id and
// two. A project that cannot be reached is a permanent failure: the effect
// is dropped (the countersign/config check says why).
func (b *Board) Apply(ctx context.Context, inst int64, e rules.Effect) error {
	cfg := rules.BoardConfig{Project: e.Project, Field: e.Field}
	if !cfg.On() || e.Value == "" {
		return fault.Permanent(fmt.Errorf("board effect without a project or value"))
	}
	if _, err := b.store.Get(ctx, UnreachableKey(inst, cfg.Project)); err == nil {
		b.log.Debug("board not kept: its project cannot be reached", "project", cfg.Project, "repo", e.Repo, "number", e.Number)
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read board record: %w", err)
	}
	n, err := b.issueNumber(ctx, e)
	if err != nil || n == 0 {
		return err // a goal without its issue yet: reconciliation puts it on the board
	}
	proj, err := b.project(ctx, inst, cfg)
	if errors.Is(err, ErrUnreachable) {
		return fault.Permanent(err)
	}
	if err != nil {
		return err
	}
	opt := proj.Options[e.Value]
	if opt == "" {
		return fault.Permanent(fmt.Errorf("board field %q has no option %q", cfg.Field, e.Value))
	}
	key := ItemKey(cfg.Project, e.Repo, n)
	var it Item
	if _, err := records.Load(ctx, b.store, key, &it); err != nil {
		return err
	}
	if it.ID != "" && it.Value == e.Value {
		return nil // set by countersign, and no one changed it since
	}
	for attempt := 0; ; attempt++ {
		if it.ID == "" {
			if it.ID, err = b.add(ctx, inst, proj, e.Repo, n); err != nil {
				return err
			}
			it.Value = ""
			if err := b.put(ctx, key, it); err != nil {
				return err
			}
		}
		err = b.set(ctx, inst, proj, it.ID, opt)
		if err != nil && attempt == 0 && strings.Contains(err.Error(), "Could not resolve to a node") {
			it.ID = "" // the item is gone (removed, a delivery missed): add it again
			continue
		}
		if err != nil {
			return fmt.Errorf("set %s#%d on the board: %w", e.Repo, n, classify(err, cfg.Project))
		}
		it.Value = e.Value
		return b.put(ctx, key, it)
	}
}

func (b *Board) put(ctx context.Context, key string, it Item) error {
	enc, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("encode board item: %w", err)
	}
	if err := b.store.Put(ctx, key, enc); err != nil {
		return fmt.Errorf("remember the board item: %w", err)
	}
	return nil
}

// add adds issue n of repo to the project (a read of its node id, and one
// mutation; GitHub answers the existing item when it is there already).
func (b *Board) add(ctx context.Context, inst int64, proj Project, repo string, n int) (string, error) {
	r, w, err := b.clients(inst)
	if err != nil {
		return "", fault.Permanent(err)
	}
	var q struct {
		Repository struct {
			Issue struct {
				ID string
			} `graphql:"issue(number: $number)"`
		} `graphql:"repository(owner: $owner, name: $name)"`
	}
	if err := r.Query(ctx, &q, map[string]any{"owner": githubv4.String(gh.OwnerOf(repo)), "name": githubv4.String(gh.NameOf(repo)),
		"number": githubv4.Int(int32(n))}); err != nil {
		if strings.Contains(err.Error(), "Could not resolve") {
			return "", fault.Permanent(fmt.Errorf("read %s#%d: %w", repo, n, err))
		}
		return "", fmt.Errorf("read %s#%d: %w", repo, n, err)
	}
	var m struct {
		AddProjectV2ItemByID struct {
			Item struct {
				ID string
			}
		} `graphql:"addProjectV2ItemById(input: $input)"`
	}
	in := githubv4.AddProjectV2ItemByIdInput{ProjectID: githubv4.ID(proj.ID), ContentID: githubv4.ID(q.Repository.Issue.ID)}
	if err := w.Mutate(ctx, &m, in, nil); err != nil {
		return "", fmt.Errorf("add %s#%d to the board: %w", repo, n, err)
	}
	return m.AddProjectV2ItemByID.Item.ID, nil
}

// set sets item's field to option opt (one mutation).
func (b *Board) set(ctx context.Context, inst int64, proj Project, item, opt string) error {
	_, w, err := b.clients(inst)
	if err != nil {
		return fault.Permanent(err)
	}
	var m struct {
		UpdateProjectV2ItemFieldValue struct {
			ProjectV2Item struct {
				ID string
			} `graphql:"projectV2Item"`
		} `graphql:"updateProjectV2ItemFieldValue(input: $input)"`
	}
	o := githubv4.String(opt)
	in := githubv4.UpdateProjectV2ItemFieldValueInput{ProjectID: githubv4.ID(proj.ID), ItemID: githubv4.ID(item), FieldID: githubv4.ID(proj.FieldID),
		Value: githubv4.ProjectV2FieldValue{SingleSelectOptionID: &o}}
	return w.Mutate(ctx, &m, in, nil)
}

// now is the time records are stamped with.
var now = func() time.Time { return time.Now().UTC() }
