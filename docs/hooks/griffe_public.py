"""A griffe extension for the API pages: a module's members are the names its ``__all__``
lists, so names it only imports (``stop_gradient_p``, ``ArrayBase``, an error class) stay
off its page. Submodules stay: a page that renders a package walks them."""

from __future__ import annotations

from typing import Any

import griffe


class PublicMembers(griffe.Extension):
    """Drop each module's members that its ``__all__`` does not list."""

    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        exports = mod.exports
        if exports is None:
            return
        listed = {e if isinstance(e, str) else e.name for e in exports}
        for name, member in list(mod.members.items()):
            if name in listed or (not member.is_alias and member.is_module):  # (an alias is never resolved here)
                continue
            mod.del_member(name)
