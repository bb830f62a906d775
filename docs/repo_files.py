"""mkdocs hook: the files outside docs/ that the pages link to.

The pages link to them as a code host reads them (`../samples/pictures/product.svg`,
`../grammar/adgrad.lark`); this copies each into the site, at its path in the
repository, and points the link at the copy. README.md is left out: its links
point into docs/, which the site already is.
"""

import re
from pathlib import Path

from mkdocs.structure.files import File

LINK = re.compile(r'\]\(\.\./([^)\s#]+)')


def on_files(files, config):
    docs = Path(config['docs_dir'])
    root = docs.parent
    for page in sorted(docs.glob('*.md')):
        for target in sorted(set(LINK.findall(page.read_text(encoding='utf-8')))):
            if (target != 'README.md' and (root / target).is_file()
                    and files.get_file_from_path(target) is None):
                files.append(File(target, str(root), config['site_dir'],
                                  config['use_directory_urls']))
    return files


def on_page_markdown(markdown, page, config, files):
    return LINK.sub(lambda link: '](' + link[1] if link[1] != 'README.md' else link[0], markdown)
