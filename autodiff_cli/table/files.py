"""Output files, all or nothing: -o FILE is written to a temporary file beside
it, renamed over it only once everything is written; on an error FILE is as
it was. A pipe, a device, or a name for one of this process's own open
descriptors (/dev/stdout) is written in place instead.

Where FILE is a symbolic link, the file it leads to is replaced and the link
stays a link; the replaced file keeps its permissions and, where the process
may set them, its owner and group.
"""

import os
import stat
from collections import namedtuple

from ..errors import UsageError

# file: the regular file to replace, or None to write in place; descriptor:
# the open descriptor of this process that the name reaches (/dev/stdout: 1),
# or None; old: os.stat() of the file replaced, None for a new one.
Place = namedtuple('Place', 'file descriptor old')
_IN_PLACE = Place(None, None, None)
_MOST_LINKS = 40   # in a row, as Linux follows them (ELOOP past that)


def cannot(path, why):
    return UsageError(f'cannot write {path}: {why}')


def _why(error):
    return (error.strerror or str(error)).lower()


def output_place(path):
    """Where and how -o PATH is written (see Place).

    The name is followed link by link, each read from the real folder that
    holds it, so `sub/../x` means what the file system says it means (not
    what os.path.abspath would make of it lexically). A name that reaches
    /proc, /dev/fd included, is a stream the shell opened, perhaps to append
    to: a rename would put a new file in its place rather than write into it.
    """
    if path.endswith(tuple(filter(None, (os.sep, os.altsep)))):
        raise cannot(path, 'a file name cannot end in ' + path[-1])
    try:
        hop = os.path.join(os.getcwd(), path)
    except OSError as error:
        raise cannot(path, f'{_why(error)} (the current folder)') from None
    for _ in range(_MOST_LINKS + 1):
        folder, name = os.path.realpath(os.path.dirname(hop)), os.path.basename(hop)
        if _own_descriptors(folder):
            return Place(None, int(name), None) if name.isdigit() else _IN_PLACE
        if folder == '/proc' or folder.startswith('/proc/'):
            return _IN_PLACE
        try:
            link = os.readlink(hop)
        except OSError:   # no link (or nothing there yet): the end of the chain
            break
        hop = os.path.join(folder, link)
    else:
        raise cannot(path, 'too many levels of symbolic links')
    target = os.path.join(folder, name)
    try:
        old = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return Place(target, None, None)
    except OSError as error:
        raise cannot(path, _why(error)) from None
    if not stat.S_ISREG(old.st_mode):
        return _IN_PLACE   # a pipe or a device (a folder: opening it says so)
    if not os.access(target, os.W_OK):
        raise cannot(path, 'permission denied')
    return Place(target, None, old)


def _own_descriptors(folder):
    """Whether `folder` lists this process's open descriptors by number."""
    own = f'/proc/{os.getpid()}/'
    return folder in ('/dev/fd', own + 'fd') or (
        folder.startswith(own + 'task/') and folder.endswith('/fd'))


class Output:
    """-o PATH, opened by `with`: `file` takes the output, commit() puts it
    in place, and leaving the block without commit() removes the temporary
    file. In place, PATH is appended to (opened anew with truncation,
    /dev/stdout would empty the file `>> log` gave the shell), or the
    descriptor it names is written through a duplicate, which shares its
    position: whatever else goes there (a warning through 2>&1) stays in
    order."""

    def __init__(self, path, binary=True):
        self.path, self.binary = path, binary
        self.place = output_place(path)
        self.temp = self.file = None

    @property
    def in_place(self):
        return self.place.file is None

    def __enter__(self):
        text = {} if self.binary else {'encoding': 'utf-8', 'newline': ''}
        write = 'wb' if self.binary else 'w'
        try:
            if self.place.descriptor is not None:   # (fdopen truncates nothing)
                self.file = os.fdopen(os.dup(self.place.descriptor), write, **text)
            elif self.in_place:
                self.file = open(self.path, 'ab' if self.binary else 'a', **text)
            else:
                import tempfile   # with random and shutil: not on every start-up
                folder, base = os.path.split(self.place.file)
                handle, self.temp = tempfile.mkstemp(prefix=f'.{base}.', suffix='.tmp', dir=folder)
                self.file = os.fdopen(handle, write, **text)
        except OSError as error:
            raise cannot(self.path, _why(error)) from None
        return self

    def commit(self):
        try:
            self.file.close()
            if self.temp is None:
                return
            old = self.place.old
            # mkstemp makes the file private: the mode a new file would get,
            # or the replaced file's mode and, where allowed, its owners.
            os.chmod(self.temp, stat.S_IMODE(old.st_mode) if old else
                     0o666 & ~umask(os.path.dirname(self.temp)))
            if old is not None and hasattr(os, 'chown'):
                try:
                    os.chown(self.temp, old.st_uid, old.st_gid)
                except OSError:   # only root may give a file away
                    pass
            os.replace(self.temp, self.place.file)
            self.temp = None
        except OSError as error:
            raise cannot(self.path, _why(error)) from None

    def __exit__(self, *exc):
        if self.file is not None and not self.file.closed:
            try:
                self.file.close()
            except OSError:   # an error is on its way already
                pass
        if self.temp is not None:
            try:
                os.unlink(self.temp)
            except OSError:
                pass


def umask(folder='.'):
    """The process's umask, read without changing it (os.umask can only set it,
    and setting it twice races with any other thread creating files)."""
    try:
        with open('/proc/self/status', encoding='ascii') as f:
            for line in f:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # No /proc: the mode a new file gets is 0o666 less the umask.
    probe = os.path.join(folder, f'.adgrad-umask-{os.getpid()}')
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        try:
            return 0o666 & ~stat.S_IMODE(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError:
        return 0o022
