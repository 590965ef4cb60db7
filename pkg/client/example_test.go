package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Each example runs against its own real rlapi: exampleServer (main_test.go)
// returns the URL of a freshly started server and an admin token. In a
// program both come from configuration, e.g. RLCTL_URL and RLCTL_TOKEN.

func ExampleNew() {
	baseURL, token := exampleServer()
	ctx := context.Background()

	c, err := client.New(baseURL, client.Options{Token: token, UserAgent: "example/1.0"})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Readyz(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("ready")

	// Without a token only the probes and /api/version answer.
	anonymous, err := client.New(baseURL, client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = anonymous.ListDefinitions(ctx, client.DefinitionFilter{})
	fmt.Println("unauthorized:", errors.Is(err, client.ErrUnauthorized))
	// Output:
	// ready
	// unauthorized: true
}

func ExampleClient_PutDefinition() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}

	// 100 requests a minute for each user in "developers", 50 for each agent.
	users, agents := 100, 50
	res, err := c.PutDefinition(ctx, ratelimit.Definition{
		Axis:             ratelimit.AxisCaller,
		EntityType:       ratelimit.EntityGroup,
		Name:             "developers",
		WindowSeconds:    60,
		UserMaxRequests:  &users,
		AgentMaxRequests: &agents,
		Enabled:          true,
	}, client.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res.Created, res.Value.ID, "version", res.Value.Version)

	// Raise the user limit, but only if nobody changed the definition since
	// it was read: IfVersion makes the write conditional.
	d := res.Value
	raised := 200
	d.UserMaxRequests = &raised
	res, err = c.PutDefinition(ctx, d, client.WriteOptions{IfVersion: d.Version})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res.Created, res.Value.ID, "version", res.Value.Version)

	// The version read first is now stale.
	_, err = c.PutDefinition(ctx, d, client.WriteOptions{IfVersion: d.Version})
	fmt.Println("stale:", errors.Is(err, client.ErrPreconditionFailed))
	// Output:
	// created: true caller:group:developers:60 version 1
	// created: false caller:group:developers:60 version 2
	// stale: true
}

func ExampleClient_PutDefinition_floor() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}

	// Per-minute caller limits below the server's floors are refused.
	users, agents := 5, 2
	_, err = c.PutDefinition(ctx, ratelimit.Definition{
		Axis:             ratelimit.AxisCaller,
		EntityType:       ratelimit.EntityGroup,
		Name:             "interns",
		WindowSeconds:    60,
		UserMaxRequests:  &users,
		AgentMaxRequests: &agents,
		Enabled:          true,
	}, client.WriteOptions{})

	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, errors.Is(err, client.ErrBadRequest))
		fmt.Println(apiErr.Detail)
		for _, fe := range apiErr.Errors {
			fmt.Println("field:", fe.Field)
		}
	}
	// Output:
	// 400 true
	// user_max_requests 5 is below the user floor of 20/min for windows <= 60s; raise it to at least 20 or use a window longer than 60s; agent_max_requests 2 is below the agent floor of 10/min for windows <= 60s; raise it to at least 10 or use a window longer than 60s
	// field: user_max_requests
	// field: agent_max_requests
}

func ExampleClient_PutDefinition_dryRun() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}
	users := 100
	created, err := c.PutDefinition(ctx, ratelimit.Definition{
		Axis:            ratelimit.AxisCaller,
		EntityType:      ratelimit.EntityGroup,
		Name:            "partners",
		WindowSeconds:   60,
		UserMaxRequests: &users,
		Enabled:         true,
	}, client.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}

	// Ask what a change would do: the server runs it and rolls it back.
	d := created.Value
	raised, agents := 150, 30
	d.UserMaxRequests, d.AgentMaxRequests = &raised, &agents
	res, err := c.PutDefinition(ctx, d, client.WriteOptions{DryRun: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.DryRun.ID, res.DryRun.Action)
	for _, ch := range res.DryRun.Changes {
		from, _ := json.Marshal(ch.From)
		to, _ := json.Marshal(ch.To)
		fmt.Printf("  %s: %s -> %s\n", ch.Field, from, to)
	}

	stored, err := c.GetDefinition(ctx, d.Key())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored:", *stored.UserMaxRequests, "version", stored.Version)
	// Output:
	// caller:group:partners:60 update
	//   agent_max_requests: null -> 30
	//   user_max_requests: 100 -> 150
	// stored: 100 version 1
}

func ExampleClient_PutMembership() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}

	res, err := c.PutMembership(ctx, ratelimit.Membership{
		SubjectType: ratelimit.SubjectUser,
		Subject:     "alice",
		Groups:      []string{"developers", "oncall"},
	}, client.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res.Created, res.Value.ID, res.Value.Groups)

	m, err := c.GetMembership(ctx, "user:alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.ID, m.Groups, "version", m.Version)
	// Output:
	// created: true user:alice [developers oncall]
	// user:alice [developers oncall] version 1
}

func ExampleClient_Quarantine() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}

	res, err := c.Quarantine(ctx, ratelimit.SubjectClient, "scraper-bot",
		client.QuarantineRequest{Reason: "hammering the search tool"}, client.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res.Created)

	list, err := c.ListQuarantine(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range list.Callers {
		fmt.Printf("%s %s: %s\n", e.SubjectType, e.Subject, e.Reason)
	}

	removed, _, err := c.Unquarantine(ctx, ratelimit.SubjectClient, "scraper-bot", client.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("removed:", removed)
	// Output:
	// created: true
	// client scraper-bot: hammering the search tool
	// removed: true
}

func ExampleClient_Quarantine_admin() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.PutAdmin(ctx, ratelimit.Admin{
		SubjectType: ratelimit.SubjectUser,
		Subject:     "root",
		Note:        "break-glass account",
	}, client.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}

	// Administrators can never be quarantined.
	_, err = c.Quarantine(ctx, ratelimit.SubjectUser, "root", client.QuarantineRequest{}, client.WriteOptions{})
	fmt.Println("forbidden:", errors.Is(err, client.ErrForbidden))
	fmt.Println(err)
	// Output:
	// forbidden: true
	// Refusing to quarantine 'root': it has administrator privileges. Administrators cannot be quarantined; revoke the grant first (DELETE /api/rate-limit-admins/user:root) if this is intended.
}

func ExampleClient_ListAllDefinitions() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}
	users, hourly, target := 100, 2000, 500
	for _, d := range []ratelimit.Definition{
		{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "developers", WindowSeconds: 60, UserMaxRequests: &users, Enabled: true},
		{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "developers", WindowSeconds: 3600, UserMaxRequests: &hourly, Enabled: true},
		{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "partners", WindowSeconds: 60, UserMaxRequests: &users, Enabled: true},
		{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "search", WindowSeconds: 60, MaxRequests: &target, Enabled: true},
	} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			log.Fatal(err)
		}
	}

	// Every caller-axis definition, fetched two per page.
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{Axis: ratelimit.AxisCaller, Limit: 2})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range defs {
		fmt.Println(d.ID)
	}
	// Output:
	// caller:group:developers:3600
	// caller:group:developers:60
	// caller:group:partners:60
}

func ExampleClient_GetDefinition_notFound() {
	baseURL, token := exampleServer()
	ctx := context.Background()
	c, err := client.New(baseURL, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}

	_, err = c.GetDefinition(ctx, "caller:group:nobody:60")
	if errors.Is(err, client.ErrNotFound) {
		fmt.Println("not found:", err)
	}
	// Output:
	// not found: definition 'caller:group:nobody:60' not found
}
