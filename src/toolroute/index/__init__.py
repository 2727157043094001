"""Index: tool documents, TDWA, lexical (bm25s) and dense layers for servers and tools."""

from toolroute.index.build import ToolIndex, build_index
from toolroute.index.document import QuestionGenerator, TemplateQuestions, ToolDoc, build_docs
from toolroute.index.lexical import LexicalIndex
from toolroute.index.tdwa import PRESETS, DocConfig, tdwa

__all__ = [
    "PRESETS",
    "DocConfig",
    "LexicalIndex",
    "QuestionGenerator",
    "TemplateQuestions",
    "ToolDoc",
    "ToolIndex",
    "build_docs",
    "build_index",
    "tdwa",
]
