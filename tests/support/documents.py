"""Test documents built in the test itself (no binary fixtures): PDFs written by hand (one
text stream per page, a real cross-reference table), DOCX archives written with ``zipfile``,
and a zip bomb."""

from __future__ import annotations

import io
import zipfile

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _pdf_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(pages: list[list[str]], *, title: str | None = None) -> bytes:
    """A PDF whose page ``i`` shows the lines ``pages[i]`` in Helvetica (an empty list: a page
    without text)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font, then per page: page object, content stream; last: info
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        content_id = 5 + 2 * i
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {content_id} 0 R >>".encode())
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            ops.append(f"({_pdf_text(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1") if lines else b""
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info_id = None
    if title is not None:
        objects.append(f"<< /Title ({_pdf_text(title)}) >>".encode("latin-1"))
        info_id = len(objects)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info_id} 0 R" if info_id else "") + " >>"
    out.write(b"trailer\n" + trailer.encode() + b"\nstartxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


def encrypted_pdf(pages: list[list[str]], password: str = "s3cret") -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf(pages))))
    writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _paragraph(text: str, style: str | None = None) -> str:
    from xml.sax.saxutils import escape

    ppr = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{ppr}<w:r><w:t xml:space=\"preserve\">{escape(text)}</w:t></w:r></w:p>"


def docx(blocks: list[tuple[str | None, str]], *, document_xml: bytes | None = None,
         extra: dict[str, bytes] | None = None) -> bytes:
    """A DOCX of ``(style, text)`` paragraphs (style ``Heading1``.., ``Title`` or None)."""
    body = "".join(_paragraph(text, style) for style, text in blocks)
    xml = document_xml or (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                           f'<w:document xmlns:w="{_W}"><w:body>{body}</w:body></w:document>').encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml",
                         '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
                         'content-types"><Override PartName="/word/document.xml" ContentType="application/'
                         'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
        archive.writestr("word/document.xml", xml)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return out.getvalue()


def docx_bomb() -> bytes:
    """A small DOCX whose one extra member inflates 1000-fold (20 MB of zeros)."""
    return docx([(None, "Hello")], extra={"word/media/blob.bin": b"\0" * 20_000_000})
