package userdata

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"
)

// boundary is the fixed MIME boundary, which keeps the output deterministic.
const boundary = "//"

// MIME part content types.
const (
	contentTypeShell      = `text/x-shellscript; charset="us-ascii"`
	contentTypeNodeConfig = "application/node.eks.aws"
)

// part is one part of a MIME multi-part user data document.
type part struct {
	header textproto.MIMEHeader
	body   []byte
}

// isMIME reports whether user data is a MIME document.
func isMIME(s string) bool {
	return strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "MIME-Version:")
}

// userParts splits the user's user data into MIME parts: the parts of a
// MIME document, or the whole text as one part of the type detect picks.
func userParts(userData *string, detect func(string) string) ([]part, error) {
	if userData == nil || strings.TrimSpace(*userData) == "" {
		return nil, nil
	}
	s := *userData
	if !isMIME(s) {
		return []part{{header: textproto.MIMEHeader{"Content-Type": {detect(s)}}, body: []byte(s)}}, nil
	}
	msg, err := mail.ReadMessage(strings.NewReader(s))
	if err != nil {
		return nil, fmt.Errorf("user data is not a valid MIME document: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("user data MIME document must be multipart/mixed with a boundary")
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var parts []part
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading user data MIME part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading user data MIME part %d: %w", len(parts)+1, err)
		}
		parts = append(parts, part{header: p.Header, body: body})
	}
	return parts, nil
}

// writeMIME renders parts as a MIME multi-part document.
func writeMIME(parts []part) (string, error) {
	var buf bytes.Buffer
	buf.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"" + boundary + "\"\r\n\r\n")
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		return "", err
	}
	for _, p := range parts {
		pw, err := w.CreatePart(p.header)
		if err != nil {
			return "", err
		}
		if _, err := pw.Write(p.body); err != nil {
			return "", err
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}
