package s3dest_test

import (
	"io"
	"net/http"
)

// sinkS3 accepts single and multipart uploads and discards their bodies.
type sinkS3 struct{}

func (sinkS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	q := r.URL.Query()
	w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		w.Header().Set("Content-Type", "application/xml")
		_, _ = io.WriteString(w, `<InitiateMultipartUploadResult><Bucket>oxypipe</Bucket><Key>k</Key><UploadId>u1</UploadId></InitiateMultipartUploadResult>`)
	case r.Method == http.MethodPost && q.Has("uploadId"):
		w.Header().Set("Content-Type", "application/xml")
		_, _ = io.WriteString(w, `<CompleteMultipartUploadResult><Bucket>oxypipe</Bucket><Key>k</Key><ETag>"x-3"</ETag></CompleteMultipartUploadResult>`)
	}
}
