using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Text;

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
