"""Reading a page back with `html.parser`: a strict little DOM (every tag must be closed) to find
elements by tag and attributes, for the tests of the report and the A/B page."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "hr", "img", "input", "link", "wbr"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text for child in self.children)

    def find_all(self, tag: str, **attrs: str) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                if child.tag == tag and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                    found.append(child)
                found += child.find_all(tag, **attrs)
        return found

    def child(self, tag: str) -> Node:
        """The first element right under this one with that tag (not one nested deeper)."""
        return next(child for child in self.children if isinstance(child, Node) and child.tag == tag)

    def one(self, tag: str, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, (tag, attrs, len(found))
        return found[0]


class TreeBuilder(HTMLParser):
    """A strict little DOM: an end tag that does not close the innermost open element fails the test."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("document", {})
        self.stack = [self.root]
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {key: value or "" for key, value in attrs})
        self.stack[-1].children.append(node)
        self.tags.append(tag)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> TreeBuilder:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.stack == [builder.root], "unclosed elements"
    return builder


def section(root: Node, model: str, scenario: str) -> Node:
    return root.one("section", data_model=model, data_scenario=scenario)


def summary_cell(group: Node, score: str, column: str) -> str:
    return group.one("tr", data_score=score).one("td", data_col=column).text


def squeeze(text: str) -> str:
    """Text as a reader sees it: runs of whitespace (template line breaks) as one space."""
    return " ".join(text.split())
