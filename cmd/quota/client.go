package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// ask connects to the ledger as client, sends body on subject and returns
// the reply, or an error exiting exitError that says why there is none
// (why adds a reason of the subject's own to "no ledger server answers").
func ask(g *globalFlags, client, subject string, body []byte, why string) (*nats.Msg, error) {
	nc, err := g.connect(client)
	if err != nil {
		return nil, withCode(exitError, err)
	}
	defer nc.Close()
	msg, err := g.request(nc, subject, body)
	if err != nil {
		return nil, askError(subject, err, why)
	}
	return msg, nil
}

// query asks subject with req as JSON and decodes the reply into a Reply:
// a query reply of the ledger, whose "error" field, when set, is the
// command's error.
func query[Reply any](g *globalFlags, client, subject string, req any) (*Reply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, withCode(exitError, err)
	}
	msg, err := ask(g, client, subject, body, "")
	if err != nil {
		return nil, err
	}
	var reply Reply
	var failed struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return nil, withCode(exitError, fmt.Errorf("bad reply from the ledger: %w", err))
	}
	if err := json.Unmarshal(msg.Data, &failed); err == nil && failed.Error != "" {
		return nil, withCode(exitError, errors.New(failed.Error))
	}
	return &reply, nil
}
