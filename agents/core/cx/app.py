"""The CX Agent Studio app ZIP both ways, its entry points in one place (no logic here):
export `to_cx_files` (`agents.core.cx.export`), the ZIP `zip_bytes` / `read_zip`
(`agents.core.cx.archive`), import `read_cx_files` / `from_cx_files`
(`agents.core.cx.import_`), the layout's `folder_name` and ``CODES``
(`agents.core.cx.layout`)."""

from agents.core.cx.archive import read_zip, zip_bytes
from agents.core.cx.export import to_cx_files
from agents.core.cx.import_ import from_cx_files, read_cx_files
from agents.core.cx.layout import CODES, folder_name

__all__ = [
    "CODES",
    "folder_name",
    "from_cx_files",
    "read_cx_files",
    "read_zip",
    "to_cx_files",
    "zip_bytes",
]
