using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;
using System.Xml;

namespace Studio.Tools.Localization
{
    /// <summary>Writes string tables for the translators' CAT tool.</summary>
    public static class StringTableExporter
    {
        public static void ExportCsv(string path, IEnumerable<StringEntry> entries)
        {
            using (var writer = new StreamWriter(path, false, new UTF8Encoding(true)))
            {
                writer.WriteLine("key,source,context,max_length");
                foreach (var e in entries)
                {
                    writer.WriteLine(string.Join(",",
                        Quote(e.Key),
                        Quote(e.Source),
                        Quote(e.Context),
                        e.MaxLength.ToString(CultureInfo.InvariantCulture)));
                }
            }
        }

        public static void ExportXliff(string path, string sourceLang, IEnumerable<StringEntry> entries)
        {
            var settings = new XmlWriterSettings { Indent = true, Encoding = new UTF8Encoding(false) };
            var stream = new FileStream(path, FileMode.Create, FileAccess.Write);
            var xml = XmlWriter.Create(stream, settings);

            xml.WriteStartDocument();
            xml.WriteStartElement("xliff", "urn:oasis:names:tc:xliff:document:1.2");
            xml.WriteAttributeString("version", "1.2");
            xml.WriteStartElement("file");
            xml.WriteAttributeString("source-language", sourceLang);
            xml.WriteAttributeString("datatype", "plaintext");
            xml.WriteAttributeString("original", "strings");
            xml.WriteStartElement("body");
            foreach (var e in entries)
            {
                xml.WriteStartElement("trans-unit");
                xml.WriteAttributeString("id", e.Key);
                xml.WriteAttributeString("maxwidth", e.MaxLength.ToString(CultureInfo.InvariantCulture));
                xml.WriteElementString("source", e.Source);
                xml.WriteElementString("note", e.Context);
                xml.WriteEndElement();
            }
            xml.WriteEndElement();
            xml.WriteEndElement();
            xml.WriteEndElement();
            xml.WriteEndDocument();
            xml.Flush();
        }

        private static string Quote(string value)
        {
            if (string.IsNullOrEmpty(value))
            {
                return "\"\"";
            }
            return "\"" + value.Replace("\"", "\"\"") + "\"";
        }
    }
}
