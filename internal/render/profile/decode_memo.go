package profile

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"slices"
)

// DocumentDigest is the digest of everything decoding doc reads: its file
// (objects name it), the fields patches set (SetBy, kept on the object) and
// its bytes. Two documents of equal digests decode to equal objects.
func DocumentDigest(doc Document) [32]byte {
	h := sha256.New()
	writeField(h, []byte(doc.File))
	setBy, err := json.Marshal(doc.SetBy)
	if err != nil {
		// FieldSource is strings only; an error cannot happen. Should it,
		// the digest still differs from any document's with a SetBy.
		setBy = []byte("unencodable")
	}
	writeField(h, setBy)
	writeField(h, doc.Data)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// writeField writes b to h after its length, so that no two sequences of
// fields run together into the same bytes.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// DecodeDocumentsReusing is DecodeDocuments that takes the object of a
// document it knows (known, by DocumentDigest: the objects of a revision
// decoded before) instead of decoding it again: a push changes a few
// documents of a landscape, and decoding (YAML to JSON, strict decoding, the
// CRD schema's check) is most of what the rest would cost. A known object is
// copied, so the revisions share nothing. Only objects that decoded without
// a problem are known, and a document's decoding does not depend on its
// place in the input unless it has a problem, so the objects and problems
// are those of DecodeDocuments
// (TestDecodingReusingAnEarlierRevisionGivesWhatDecodingGives,
// FuzzDecodingReusingGivesWhatDecodingGives). digests[i] is
// the DocumentDigest of objects[i], to know them at the next revision.
func DecodeDocumentsReusing(docs []Document, known map[[32]byte]Object) (objects []Object, problems Problems, digests [][32]byte) {
	all := make([][32]byte, len(docs))
	for i, doc := range docs {
		all[i] = DocumentDigest(doc)
	}
	decoded := decodeEach(docs, func(i int) bool {
		_, ok := known[all[i]]
		return !ok
	})
	for i := range docs {
		if object, ok := known[all[i]]; ok {
			objects = append(objects, object.DeepCopy())
			digests = append(digests, all[i])
			continue
		}
		problems = append(problems, decoded[i].problems...)
		if decoded[i].object != nil && len(decoded[i].problems) == 0 {
			objects = append(objects, *decoded[i].object)
			digests = append(digests, all[i])
		}
	}
	return objects, problems, digests
}

// DeepCopy is a copy of o that shares nothing with it.
func (o Object) DeepCopy() Object {
	c := Object{File: o.File, SetBy: slices.Clone(o.SetBy)}
	if o.CloudProfile != nil {
		c.CloudProfile = o.CloudProfile.DeepCopy()
	}
	if o.NamespacedCloudProfile != nil {
		c.NamespacedCloudProfile = o.NamespacedCloudProfile.DeepCopy()
	}
	return c
}
