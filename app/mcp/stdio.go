package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the transport of a server over stdio (r its input, w its
// output), one JSON-RPC message a line. A line that is no JSON is answered
// with a JSON-RPC parse error (-32700), one that is JSON but no JSON-RPC
// message with an invalid request (-32600), and the server goes on: the SDK's
// own transport would end the session, and every call in flight with it. A
// line longer than the SDK's limit ends the input.
func StdioTransport(r io.Reader, w io.WriteCloser) sdk.Transport {
	out := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64*1024), sdk.DefaultMaxLineLength)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			if code, msg := checkMessage(line); code != 0 {
				out.reply(idOf(line), code, msg)
				continue
			}
			if _, err := pw.Write(append(line, '\n')); err != nil {
				return // the server stopped reading
			}
		}
		pw.CloseWithError(sc.Err()) // nil: io.EOF
	}()
	return &sdk.IOTransport{Reader: pr, Writer: out}
}

// checkMessage is 0 for a line the SDK can read (a JSON-RPC message, or a
// batch of them), else the JSON-RPC error code and message that answer it.
func checkMessage(line []byte) (int, string) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "Parse error: the line is not JSON"
	}
	msgs := []json.RawMessage{line}
	if line[0] == '[' {
		if err := json.Unmarshal(line, &msgs); err != nil || len(msgs) == 0 {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch"
		}
	}
	for _, m := range msgs {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			return jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message"
		}
	}
	return 0, ""
}

// idOf is the id of a JSON-RPC object when it is a string or a number, so
// that the client can tell which request was refused; else null.
func idOf(line []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 {
		var v any
		if json.Unmarshal(m.ID, &v) == nil {
			switch v.(type) {
			case string, float64:
				return m.ID
			}
		}
	}
	return json.RawMessage("null")
}

// lockedWriter writes whole lines: the SDK's messages and the refusals of
// malformed lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// reply writes a JSON-RPC error response.
func (l *lockedWriter) reply(id json.RawMessage, code int, msg string) {
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	if err != nil {
		return
	}
	_, _ = l.Write(append(b, '\n'))
}
