package switchboard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// File is a file a job produced (document.export's PDF or DOCX). A job
// carries it in its result under "file", its bytes base64-encoded in
// content, so it is stored with the job and bounded like any result; GET
// /api/v1/jobs/{id}/file serves the bytes themselves.
type File struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	Size        int    `json:"size"`
	SHA256      string `json:"sha256"`
	Content     []byte `json:"content"`
}

// NewFile describes content under name.
func NewFile(name, contentType string, content []byte) File {
	sum := sha256.Sum256(content)
	return File{Name: name, ContentType: contentType, Size: len(content), SHA256: hex.EncodeToString(sum[:]), Content: content}
}

// JobFile returns the file a finished job produced: CONFLICT while it
// runs or when it did not succeed, NOT_FOUND when its result holds no
// file, INTERNAL when the stored file does not match its checksum.
func JobFile(j Job) (File, error) {
	if j.Status != JobSucceeded {
		msg := "job %s is %s; its file is ready once it has succeeded"
		if j.Error != nil {
			return File{}, Errorf(CodeConflict, msg+" (%s: %s)", j.ID, j.Status, j.Error.Code, j.Error.Message).WithDetails(map[string]any{"status": j.Status})
		}
		return File{}, Errorf(CodeConflict, msg, j.ID, j.Status).WithDetails(map[string]any{"status": j.Status})
	}
	var r struct {
		File *File `json:"file"`
	}
	if json.Unmarshal(j.Result, &r) != nil || r.File == nil || r.File.Name == "" {
		return File{}, Errorf(CodeNotFound, "job %s (%s) produced no file", j.ID, j.Tool)
	}
	sum := sha256.Sum256(r.File.Content)
	if hex.EncodeToString(sum[:]) != r.File.SHA256 || len(r.File.Content) != r.File.Size {
		return File{}, Errorf(CodeInternal, "the stored file of job %s does not match its checksum", j.ID)
	}
	return *r.File, nil
}
