package githubtest

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file is the fake's GitHub Projects (v2): organizations' boards, read
// and written through GraphQL as GitHub serves them, and the
// projects_v2_item webhooks GitHub sends the organization's App:
//
//	organization(login) { projectV2(number) { id number title url
//	  fields(first) { nodes { ... on ProjectV2SingleSelectField { id name dataType options { id name } }
//	                          ... on ProjectV2Field { id name dataType } } }
//	  field(name) { ... }
//	  items(first, after) { totalCount pageInfo {...} nodes { id type isArchived
//	    content { ... on Issue { id number repository { nameWithOwner } } }
//	    fieldValueByName(name) { ... on ProjectV2ItemFieldSingleSelectValue { name optionId } } } } } }
//	node(id) { ... on Issue {...} ... on ProjectV2Item {...} ... on ProjectV2 {...} }
//	mutation { addProjectV2ItemById(input) { item { id } }
//	  updateProjectV2ItemFieldValue(input) { projectV2Item { id } }
//	  createProjectV2Field(input) { projectV2Field { ... on ProjectV2SingleSelectField { id name options { id name } } } }
//	  deleteProjectV2Item(input) { deletedItemId } }
//
// As on GitHub, a project the installation's organization does not own is
// NOT_FOUND, and one it may not reach (an App without the organization
// projects permission: SetProjectAccess) is FORBIDDEN, "Resource not
// accessible by integration". A mutation is a write: Options.WriteLimit
// counts it. Each change of an item is a projects_v2_item webhook (created,
// edited with changes.field_value, deleted) whose sender is whoever made it:
// the App's bot for its own mutations, the person for SetBoardValue and
// RemoveBoardItem.

type projectState struct {
	id       int64
	org      string
	number   int
	title    string
	noAccess bool // SetProjectAccess(false)
	fields   []*projectField
	items    []*projectItem
}

type projectField struct {
	id       int64
	name     string
	dataType string // TITLE, SINGLE_SELECT, ...
	options  []projectOption
}

type projectOption struct{ id, name string }

type projectItem struct {
	id       int64
	repo     string // the issue's repository, full name
	issueID  int64
	number   int
	creator  string
	values   map[int64]string // field id -> option id
	created  time.Time
	updated  time.Time
	archived bool
}

// gqlTypedError is a GraphQL error of a type other than NOT_FOUND.
type gqlTypedError struct{ typ, msg string }

func (e gqlTypedError) Error() string { return e.msg }

func projectKey(org string, number int) string {
	return fmt.Sprintf("%s/%d", strings.ToLower(org), number)
}

// AddProject creates organization org's project number (a board with
// GitHub's own Title and Status fields, and no items), which the App
// installed on org may read and write.
func (s *Server) AddProject(org string, number int, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects == nil {
		s.projects = map[string]*projectState{}
	}
	if number <= 0 || org == "" {
		s.misuse("AddProject(%q, %d): bad project", org, number)
		return
	}
	p := &projectState{id: s.newID(), org: org, number: number, title: title}
	p.fields = []*projectField{{id: s.newID(), name: "Title", dataType: "TITLE"},
		{id: s.newID(), name: "Status", dataType: "SINGLE_SELECT", options: []projectOption{{optionID(s.newID()), "Todo"}, {optionID(s.newID()), "In Progress"}, {optionID(s.newID()), "Done"}}}}
	s.projects[projectKey(org, number)] = p
}

// SetProjectAccess says whether the App may reach org's project number (an
// installation that has not accepted the organization projects permission
// may not).
func (s *Server) SetProjectAccess(org string, number int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.projects[projectKey(org, number)]; p != nil {
		p.noAccess = !ok
	}
}

func optionID(id int64) string { return fmt.Sprintf("%08x", uint32(id*2654435761)) }

func (p *projectState) nodeID() string { return nodeID("PVT", p.id) }

func (f *projectField) nodeID() string {
	if f.dataType == "SINGLE_SELECT" {
		return nodeID("PVTSSF", f.id)
	}
	return nodeID("PVTF", f.id)
}

func (it *projectItem) nodeID() string { return nodeID("PVTI", it.id) }

func (p *projectState) fieldNamed(name string) *projectField {
	for _, f := range p.fields {
		if strings.EqualFold(f.name, name) {
			return f
		}
	}
	return nil
}

func (p *projectState) itemOf(repo string, number int) *projectItem {
	for _, it := range p.items {
		if strings.EqualFold(it.repo, repo) && it.number == number {
			return it
		}
	}
	return nil
}

func (f *projectField) option(id string) (projectOption, bool) {
	for _, o := range f.options {
		if o.id == id {
			return o, true
		}
	}
	return projectOption{}, false
}

func (f *projectField) optionNamed(name string) (projectOption, bool) {
	for _, o := range f.options {
		if strings.EqualFold(o.name, name) {
			return o, true
		}
	}
	return projectOption{}, false
}

// ---- inspection ----

// BoardField is the options of org's project's field named field, in order;
// ok false when the project has no such field.
func (s *Server) BoardField(org string, number int, field string) (options []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[projectKey(org, number)]
	if p == nil {
		return nil, false
	}
	f := p.fieldNamed(field)
	if f == nil {
		return nil, false
	}
	for _, o := range f.options {
		options = append(options, o.name)
	}
	return options, true
}

// BoardFieldCount is how many fields named field org's project has.
func (s *Server) BoardFieldCount(org string, number int, field string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if p := s.projects[projectKey(org, number)]; p != nil {
		for _, f := range p.fields {
			if strings.EqualFold(f.name, field) {
				n++
			}
		}
	}
	return n
}

// BoardValue is the option issue number of repo shows in field of org's
// project ("" when none), and whether the issue is on the board at all.
func (s *Server) BoardValue(org string, number int, repo string, issue int, field string) (value string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[projectKey(org, number)]
	if p == nil {
		return "", false
	}
	it := p.itemOf(repo, issue)
	if it == nil {
		return "", false
	}
	f := p.fieldNamed(field)
	if f == nil {
		return "", true
	}
	o, _ := f.option(it.values[f.id])
	return o.name, true
}

// BoardItems is how many items org's project has.
func (s *Server) BoardItems(org string, number int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.projects[projectKey(org, number)]; p != nil {
		return len(p.items)
	}
	return 0
}

// ---- people's changes ----

// SetBoardValue is person setting field of issue number of repo's item on
// org's project to the option named value (as on the board's web page): a
// projects_v2_item edited webhook with person as sender.
func (s *Server) SetBoardValue(person, org string, number int, repo string, issue int, field, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[projectKey(org, number)]
	if p == nil {
		return fmt.Errorf("githubtest: no project %s/%d", org, number)
	}
	it := p.itemOf(repo, issue)
	f := p.fieldNamed(field)
	if it == nil || f == nil {
		return fmt.Errorf("githubtest: %s#%d is not on project %s/%d, or it has no field %q", repo, issue, org, number, field)
	}
	o, ok := f.optionNamed(value)
	if !ok {
		return fmt.Errorf("githubtest: field %q has no option %q", field, value)
	}
	s.setItemValue(p, it, f, o.id, person)
	return nil
}

// RemoveBoardItem is person deleting issue number of repo's item from org's
// project: a projects_v2_item deleted webhook with person as sender.
func (s *Server) RemoveBoardItem(person, org string, number int, repo string, issue int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[projectKey(org, number)]
	if p == nil {
		return fmt.Errorf("githubtest: no project %s/%d", org, number)
	}
	it := p.itemOf(repo, issue)
	if it == nil {
		return fmt.Errorf("githubtest: %s#%d is not on project %s/%d", repo, issue, org, number)
	}
	s.deleteItem(p, it, person)
	return nil
}

// setItemValue sets it's field f to option id, by sender. Call with s.mu held.
func (s *Server) setItemValue(p *projectState, it *projectItem, f *projectField, id, sender string) {
	was := it.values[f.id]
	if was == id {
		return
	}
	if it.values == nil {
		it.values = map[int64]string{}
	}
	it.values[f.id] = id
	it.updated = now()
	from, _ := f.option(was)
	to, _ := f.option(id)
	opt := func(o projectOption) any {
		if o.id == "" {
			return nil
		}
		return map[string]any{"id": o.id, "name": o.name, "color": "GRAY", "description": ""}
	}
	s.emitItem(p, it, "edited", sender, map[string]any{"field_value": map[string]any{
		"field_node_id": f.nodeID(), "field_type": "single_select", "field_name": f.name, "project_number": p.number,
		"from": opt(from), "to": opt(to)}})
}

// deleteItem removes it from p, by sender. Call with s.mu held.
func (s *Server) deleteItem(p *projectState, it *projectItem, sender string) {
	p.items = slices.DeleteFunc(p.items, func(x *projectItem) bool { return x == it })
	s.emitItem(p, it, "deleted", sender, nil)
}

// emitItem queues a projects_v2_item webhook. Call with s.mu held.
func (s *Server) emitItem(p *projectState, it *projectItem, action, sender string, changes map[string]any) {
	var archived any
	if it.archived {
		archived = it.updated.Format(time.RFC3339)
	}
	payload := map[string]any{
		"action": action,
		"projects_v2_item": map[string]any{
			"id": it.id, "node_id": it.nodeID(), "project_node_id": p.nodeID(), "content_node_id": nodeID("I", it.issueID),
			"content_type": "Issue", "creator": s.ghUser(it.creator),
			"created_at": it.created.Format(time.RFC3339), "updated_at": it.updated.Format(time.RFC3339), "archived_at": archived,
		},
		"organization": s.ghOrganization(p.org),
		"sender":       s.ghUser(sender),
	}
	if changes != nil {
		payload["changes"] = changes
	}
	if inst := s.installationOf(p.org); inst != 0 {
		payload["installation"] = map[string]any{"id": inst, "node_id": nodeID("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u", inst)}
	}
	s.emit(nil, "projects_v2_item", action, sender, payload)
}

// ghOrganization is org as webhooks show it (organization-simple).
func (s *Server) ghOrganization(org string) map[string]any {
	id := s.userID(org)
	api := s.apiURL("orgs/" + org)
	return map[string]any{"login": org, "id": id, "node_id": nodeID("O", id), "url": api,
		"repos_url": api + "/repos", "events_url": api + "/events", "hooks_url": api + "/hooks", "issues_url": api + "/issues",
		"members_url": api + "/members{/member}", "public_members_url": api + "/public_members{/member}",
		"avatar_url": fmt.Sprintf("https://avatars.githubusercontent.com/u/%d?v=4", id), "description": nil}
}

// installationOf is the installation on org's repositories (0: none). Call
// with s.mu held.
func (s *Server) installationOf(org string) int64 {
	for _, rp := range s.repos {
		if strings.EqualFold(rp.owner, org) && rp.installation != 0 {
			return rp.installation
		}
	}
	return 0
}

// ---- GraphQL ----

// gqlQueryProjects resolves the Query fields of this file.
func (s *Server) gqlQueryProjects(c *apiCall, name string, args map[string]any) (any, bool, error) {
	switch name {
	case "organization":
		login, _ := args["login"].(string)
		if login == "" || (c.user == "" && !s.installationHasOwner(c.inst, login)) {
			return nil, true, fmt.Errorf("Could not resolve to an Organization with the login of '%s'.", login)
		}
		return s.gqlOrganization(c, login), true, nil
	case "node":
		id, _ := args["id"].(string)
		v, err := s.gqlNode(c, id)
		return v, true, err
	}
	return nil, false, nil
}

// reach is the project c may read (write: and write), or the error GitHub
// answers.
func (s *Server) reach(c *apiCall, p *projectState) error {
	if p == nil || (c.user == "" && !s.installationHasOwner(c.inst, p.org)) {
		return fmt.Errorf("Could not resolve to a node with the given id.")
	}
	if p.noAccess && c.user == "" {
		return gqlTypedError{"FORBIDDEN", "Resource not accessible by integration"}
	}
	return nil
}

func (s *Server) gqlNode(c *apiCall, id string) (any, error) {
	notFound := fmt.Errorf("Could not resolve to a node with the global id of '%s'", id)
	switch {
	case strings.HasPrefix(id, "I_"):
		for _, rp := range s.repos {
			for _, is := range rp.issues {
				if is.pr == nil && nodeID("I", is.id) == id {
					if !c.sees(rp) {
						return nil, notFound
					}
					return s.gqlIssueNode(rp, is), nil
				}
			}
		}
	case strings.HasPrefix(id, "PVTI_"):
		for _, p := range s.projects {
			for _, it := range p.items {
				if it.nodeID() == id {
					if err := s.reach(c, p); err != nil {
						return nil, err
					}
					return s.gqlItem(c, p, it), nil
				}
			}
		}
	case strings.HasPrefix(id, "PVT_"):
		for _, p := range s.projects {
			if p.nodeID() == id {
				if err := s.reach(c, p); err != nil {
					return nil, err
				}
				return s.gqlProject(c, p), nil
			}
		}
	}
	return nil, notFound
}

// gqlIssueNode is an issue with the fields a node of it has beyond
// gqlIssue's: its id and repository.
func (s *Server) gqlIssueNode(rp *repoState, is *issueState) gqlObject {
	base := s.gqlIssue(rp, is)
	return gqlObject{typ: "Issue", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "id":
			return nodeID("I", is.id), true, nil
		case "repository":
			return s.gqlRepository(rp), true, nil
		}
		return base.field(name, args)
	}}
}

func (s *Server) gqlOrganization(c *apiCall, login string) gqlObject {
	return gqlObject{typ: "Organization", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "login":
			return login, true, nil
		case "projectV2":
			n, _ := gqlInt(args["number"])
			p := s.projects[projectKey(login, n)]
			if p == nil {
				return nil, true, fmt.Errorf("Could not resolve to a ProjectV2 with the number %d.", n)
			}
			if err := s.reach(c, p); err != nil {
				return nil, true, err
			}
			return s.gqlProject(c, p), true, nil
		}
		return nil, false, nil
	}}
}

func (s *Server) gqlProject(c *apiCall, p *projectState) gqlObject {
	return gqlObject{typ: "ProjectV2", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "id":
			return p.nodeID(), true, nil
		case "number":
			return p.number, true, nil
		case "title":
			return p.title, true, nil
		case "url":
			return s.webURL("orgs/" + p.org + "/projects/" + fmt.Sprint(p.number)), true, nil
		case "closed":
			return false, true, nil
		case "fields":
			list := make([]gqlObject, len(p.fields))
			for i, f := range p.fields {
				list[i] = gqlFieldObject(f)
			}
			return gqlConnection("ProjectV2FieldConfigurationConnection", list, args, len(list))
		case "field":
			n, _ := args["name"].(string)
			if f := p.fieldNamed(n); f != nil {
				o := gqlFieldObject(f)
				return &o, true, nil
			}
			return (*gqlObject)(nil), true, nil
		case "items":
			list := make([]gqlObject, len(p.items))
			for i, it := range p.items {
				list[i] = s.gqlItem(c, p, it)
			}
			return gqlConnection("ProjectV2ItemConnection", list, args, len(list))
		}
		return nil, false, nil
	}}
}

func gqlFieldObject(f *projectField) gqlObject {
	typ := "ProjectV2Field"
	if f.dataType == "SINGLE_SELECT" {
		typ = "ProjectV2SingleSelectField"
	}
	return gqlObject{typ: typ, field: func(name string, _ map[string]any) (any, bool, error) {
		switch name {
		case "id":
			return f.nodeID(), true, nil
		case "name":
			return f.name, true, nil
		case "dataType":
			return f.dataType, true, nil
		case "options":
			if typ != "ProjectV2SingleSelectField" {
				return nil, false, nil
			}
			list := make([]gqlObject, len(f.options))
			for i, o := range f.options {
				list[i] = gqlObject{typ: "ProjectV2SingleSelectFieldOption", field: func(name string, _ map[string]any) (any, bool, error) {
					switch name {
					case "id":
						return o.id, true, nil
					case "name":
						return o.name, true, nil
					}
					return nil, false, nil
				}}
			}
			return list, true, nil
		}
		return nil, false, nil
	}}
}

func (s *Server) gqlItem(c *apiCall, p *projectState, it *projectItem) gqlObject {
	return gqlObject{typ: "ProjectV2Item", field: func(name string, args map[string]any) (any, bool, error) {
		switch name {
		case "id":
			return it.nodeID(), true, nil
		case "type":
			return "ISSUE", true, nil
		case "isArchived":
			return it.archived, true, nil
		case "project":
			return s.gqlProject(c, p), true, nil
		case "content":
			rp := s.repoByName(it.repo)
			if rp == nil || rp.issues[it.number] == nil || !c.sees(rp) {
				return (*gqlObject)(nil), true, nil
			}
			return s.gqlIssueNode(rp, rp.issues[it.number]), true, nil
		case "fieldValueByName":
			n, _ := args["name"].(string)
			f := p.fieldNamed(n)
			if f == nil {
				return (*gqlObject)(nil), true, nil
			}
			o, ok := f.option(it.values[f.id])
			if !ok {
				return (*gqlObject)(nil), true, nil
			}
			v := gqlObject{typ: "ProjectV2ItemFieldSingleSelectValue", field: func(name string, _ map[string]any) (any, bool, error) {
				switch name {
				case "name":
					return o.name, true, nil
				case "optionId":
					return o.id, true, nil
				case "field":
					return gqlFieldObject(f), true, nil
				}
				return nil, false, nil
			}}
			return &v, true, nil
		}
		return nil, false, nil
	}}
}

// gqlMutation is the Mutation root: the board's mutations.
func (s *Server) gqlMutation(c *apiCall) gqlObject {
	actor := c.user
	if actor == "" {
		actor = s.botLogin
	}
	return gqlObject{typ: "Mutation", field: func(name string, args map[string]any) (any, bool, error) {
		in, _ := args["input"].(map[string]any)
		str := func(k string) string { v, _ := in[k].(string); return v }
		project := func() (*projectState, error) {
			id := str("projectId")
			for _, p := range s.projects {
				if p.nodeID() == id {
					return p, s.reach(c, p)
				}
			}
			return nil, fmt.Errorf("Could not resolve to a node with the global id of '%s'", id)
		}
		item := func(p *projectState) (*projectItem, error) {
			id := str("itemId")
			for _, it := range p.items {
				if it.nodeID() == id {
					return it, nil
				}
			}
			return nil, fmt.Errorf("Could not resolve to a node with the global id of '%s'", id)
		}
		switch name {
		case "addProjectV2ItemById":
			p, err := project()
			if err != nil {
				return nil, true, err
			}
			content := str("contentId")
			for _, rp := range s.repos {
				for _, is := range rp.issues {
					if is.pr != nil || nodeID("I", is.id) != content {
						continue
					}
					if !c.sees(rp) {
						return nil, true, fmt.Errorf("Could not resolve to a node with the global id of '%s'", content)
					}
					it := p.itemOf(rp.fullName(), is.number)
					if it == nil {
						it = &projectItem{id: s.newID(), repo: rp.fullName(), issueID: is.id, number: is.number, creator: actor,
							created: now(), updated: now()}
						p.items = append(p.items, it)
						s.emitItem(p, it, "created", actor, nil)
					}
					return gqlObject{typ: "AddProjectV2ItemByIdPayload", field: func(name string, _ map[string]any) (any, bool, error) {
						if name == "item" {
							return s.gqlItem(c, p, it), true, nil
						}
						return nil, name == "clientMutationId", nil
					}}, true, nil
				}
			}
			return nil, true, fmt.Errorf("Could not resolve to a node with the global id of '%s'", content)
		case "updateProjectV2ItemFieldValue":
			p, err := project()
			if err != nil {
				return nil, true, err
			}
			it, err := item(p)
			if err != nil {
				return nil, true, err
			}
			var f *projectField
			for _, x := range p.fields {
				if x.nodeID() == str("fieldId") {
					f = x
				}
			}
			if f == nil {
				return nil, true, fmt.Errorf("Could not resolve to a node with the global id of '%s'", str("fieldId"))
			}
			v, _ := in["value"].(map[string]any)
			opt, _ := v["singleSelectOptionId"].(string)
			if _, ok := f.option(opt); !ok || f.dataType != "SINGLE_SELECT" {
				return nil, true, gqlTypedError{"UNPROCESSABLE", fmt.Sprintf("The single select option Id does not belong to the field")}
			}
			s.setItemValue(p, it, f, opt, actor)
			return gqlObject{typ: "UpdateProjectV2ItemFieldValuePayload", field: func(name string, _ map[string]any) (any, bool, error) {
				if name == "projectV2Item" {
					return s.gqlItem(c, p, it), true, nil
				}
				return nil, name == "clientMutationId", nil
			}}, true, nil
		case "createProjectV2Field":
			p, err := project()
			if err != nil {
				return nil, true, err
			}
			fname := strings.TrimSpace(str("name"))
			if fname == "" || p.fieldNamed(fname) != nil {
				return nil, true, gqlTypedError{"UNPROCESSABLE", "Name has already been taken"}
			}
			f := &projectField{id: s.newID(), name: fname, dataType: str("dataType")}
			opts, _ := in["singleSelectOptions"].([]any)
			if f.dataType == "SINGLE_SELECT" && len(opts) == 0 {
				return nil, true, gqlTypedError{"UNPROCESSABLE", "At least one option is required for a single select field"}
			}
			for _, o := range opts {
				m, _ := o.(map[string]any)
				n, _ := m["name"].(string)
				f.options = append(f.options, projectOption{optionID(s.newID()), n})
			}
			p.fields = append(p.fields, f)
			return gqlObject{typ: "CreateProjectV2FieldPayload", field: func(name string, _ map[string]any) (any, bool, error) {
				if name == "projectV2Field" {
					return gqlFieldObject(f), true, nil
				}
				return nil, name == "clientMutationId", nil
			}}, true, nil
		case "deleteProjectV2Item":
			p, err := project()
			if err != nil {
				return nil, true, err
			}
			it, err := item(p)
			if err != nil {
				return nil, true, err
			}
			s.deleteItem(p, it, actor)
			return gqlObject{typ: "DeleteProjectV2ItemPayload", field: func(name string, _ map[string]any) (any, bool, error) {
				if name == "deletedItemId" {
					return it.nodeID(), true, nil
				}
				return nil, name == "clientMutationId", nil
			}}, true, nil
		}
		return nil, false, nil
	}}
}
