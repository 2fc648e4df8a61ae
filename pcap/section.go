package pcap

// SectionComment returns the comment of a pcapng capture's first section
// header (shb_comment: e.g. why a failed spec's capture was written, as
// homatest run's annotated captures record it); "" for classic pcap or a
// section without one (of several shb_comment options, pcapgo keeps the
// last).
func (r *Reader) SectionComment() string {
	if r.ng == nil {
		return ""
	}
	return r.ng.SectionInfo().Comment
}

// SectionCommentPath returns the section comment (Reader.SectionComment)
// of the capture at path ("-": standard input, as OpenPath reads it).
// Errors are OpenPath's.
func SectionCommentPath(path string) (string, error) {
	r, err := OpenPath(path, ReaderOptions{})
	if err != nil {
		return "", err
	}
	defer r.Close()
	return r.SectionComment(), nil
}
